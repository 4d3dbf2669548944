use super::*;
use oxydra_types::{CallId, ToolCall};

fn call(id: &str) -> ToolCall {
    ToolCall::new(CallId::from(id), "file_read", "{}")
}

fn calls(ids: &[&str]) -> Message {
    Message::assistant_with_tool_calls(None, ids.iter().map(|id| call(id)).collect())
}

fn result(id: &str) -> Message {
    Message::tool_result(CallId::from(id), "file_read", format!("ok {id}"))
}

fn result_text(id: &str, text: &str) -> Message {
    Message::tool_result(CallId::from(id), "file_read", text)
}

/// A compact picture of a conversation: `u:text`, `a:text`, `a[c1,c2]`, `t:id`, `t:id!`
/// (a synthetic result).
fn shape(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| match m.role {
            MessageRole::Tool => {
                let id = m.tool_call_id.as_ref().map_or("?", CallId::as_str);
                if m.text() == INTERRUPTED_RESULT {
                    format!("t:{id}!")
                } else {
                    format!("t:{id}")
                }
            }
            MessageRole::Assistant if !m.tool_calls.is_empty() => {
                let ids: Vec<&str> = m.tool_calls.iter().map(|c| c.id.as_str()).collect();
                format!("a[{}]", ids.join(","))
            }
            MessageRole::Assistant => format!("a:{}", m.text()),
            MessageRole::User => format!("u:{}", m.text()),
            other => format!("{}:{}", other.as_str(), m.text()),
        })
        .collect()
}

#[test]
fn the_interrupted_result_reads_as_a_tool_failure() {
    assert!(INTERRUPTED_RESULT.starts_with(oxydra_types::TOOL_FAILURE_PREFIX));
}

#[test]
fn complete_conversation_is_unchanged() {
    let messages = vec![
        Message::user("hi"),
        calls(&["a", "b"]),
        result("a"),
        result("b"),
        Message::assistant("done"),
    ];
    assert!(is_well_formed(&messages));
    assert_eq!(repair_sequence(messages.clone()), messages);
}

#[test]
fn missing_results_are_synthesised_in_call_order() {
    let messages = vec![Message::user("hi"), calls(&["a", "b", "c"]), result("b")];
    let out = repair_sequence(messages);
    assert_eq!(shape(&out), ["u:hi", "a[a,b,c]", "t:a!", "t:b", "t:c!"]);
    assert_eq!(out[2].name.as_deref(), Some("file_read"));
    assert!(is_well_formed(&out));
}

#[test]
fn reused_ids_in_a_later_turn_do_not_count_as_answers() {
    let messages = vec![
        calls(&["call_0"]),
        result("call_0"),
        calls(&["call_0"]),
        Message::user("are you there?"),
    ];
    let out = repair_sequence(messages);
    assert_eq!(
        shape(&out),
        [
            "a[call_0]",
            "t:call_0",
            "a[call_0]",
            "t:call_0!",
            "u:are you there?"
        ]
    );
}

#[test]
fn a_result_for_no_earlier_call_is_dropped() {
    let mut without_id = result("x");
    without_id.tool_call_id = None;
    let messages = vec![
        result("ghost"),
        Message::user("hi"),
        calls(&["a"]),
        result("a"),
        without_id,
        result("unknown"),
        Message::assistant("done"),
    ];
    let out = repair_sequence(messages);
    assert_eq!(shape(&out), ["u:hi", "a[a]", "t:a", "a:done"]);
    assert_eq!(out[2].text(), "ok a");
}

#[test]
fn a_second_result_for_one_call_is_dropped_keeping_the_first() {
    let messages = vec![
        calls(&["a", "b"]),
        result_text("a", "first"),
        result_text("a", "second"),
        result("b"),
        result_text("b", "again"),
    ];
    let out = repair_sequence(messages);
    assert_eq!(shape(&out), ["a[a,b]", "t:a", "t:b"]);
    assert_eq!(out[1].text(), "first");
    assert_eq!(out[2].text(), "ok b");
}

#[test]
fn separated_results_move_right_after_their_call_in_call_order() {
    let messages = vec![
        Message::user("one"),
        calls(&["a", "b"]),
        Message::user("two"),
        result("b"),
        Message::assistant("text"),
        result("a"),
    ];
    let out = repair_sequence(messages);
    assert_eq!(
        shape(&out),
        ["u:one", "a[a,b]", "t:a", "t:b", "u:two", "a:text"]
    );
}

#[test]
fn a_repeated_id_within_one_message_keeps_the_first_call() {
    let messages = vec![
        calls(&["a", "a", "b"]),
        result("a"),
        result("a"),
        result("b"),
    ];
    let out = repair_sequence(messages);
    assert_eq!(shape(&out), ["a[a,b]", "t:a", "t:b"]);
}

#[test]
fn duplicate_ids_across_assistant_messages_each_get_one_result() {
    // Two runs given the same script made the same call ids; their messages interleaved.
    let messages = vec![
        calls(&["call_0"]),
        calls(&["call_0"]),
        result_text("call_0", "second run's"),
        result_text("call_0", "first run's"),
        result_text("call_0", "stray third"),
    ];
    let out = repair_sequence(messages);
    assert_eq!(
        shape(&out),
        ["a[call_0]", "t:call_0", "a[call_0]", "t:call_0"]
    );
    // Each result answers the nearest open call before it.
    assert_eq!(out[1].text(), "first run's");
    assert_eq!(out[3].text(), "second run's");
}

/// The interleavings two `oxydra run --session S` started at once stored: both runs
/// got the same scripted answers (the same call ids), and every message of one could
/// fall between any two of the other.
#[test]
fn the_interleavings_of_two_concurrent_runs_are_repaired() {
    let run = |tag: &str| {
        vec![
            Message::user(format!("task {tag}")),
            calls(&["call_a", "call_b"]),
            result_text("call_a", &format!("{tag} a")),
            result_text("call_b", &format!("{tag} b")),
            calls(&["call_c"]),
            result_text("call_c", &format!("{tag} c")),
            Message::assistant(format!("done {tag}")),
        ]
    };
    let (first, second) = (run("1"), run("2"));
    // Strict alternation, one ahead, and a whole turn of one inside the other.
    let alternate: Vec<Message> = first
        .iter()
        .zip(&second)
        .flat_map(|(a, b)| [a.clone(), b.clone()])
        .collect();
    let mut offset = first[..1].to_vec();
    for (a, b) in first[1..].iter().zip(&second) {
        offset.push(b.clone());
        offset.push(a.clone());
    }
    offset.push(second[6].clone());
    let mut nested = first[..2].to_vec();
    nested.extend(second.iter().cloned());
    nested.extend(first[2..].iter().cloned());
    for stored in [alternate, offset, nested] {
        assert!(!is_well_formed(&stored));
        let out = repair_sequence(stored.clone());
        assert!(is_well_formed(&out), "{:?}", shape(&out));
        // Both runs' messages other than results stay, in their order.
        let others = |m: &[Message]| -> Vec<Message> {
            m.iter()
                .filter(|m| m.role != MessageRole::Tool)
                .cloned()
                .collect()
        };
        assert_eq!(others(&out), others(&stored));
        // No call is answered twice: 6 calls, 6 results, none synthetic (all were stored).
        let results: Vec<&Message> = out.iter().filter(|m| m.role == MessageRole::Tool).collect();
        assert_eq!(results.len(), 6);
        assert!(results.iter().all(|m| m.text() != INTERRUPTED_RESULT));
        assert_eq!(repair_sequence(out.clone()), out);
    }
}

#[test]
fn stored_sequences_never_decrease_and_a_repaired_group_shares_one() {
    let stored: Vec<StoredMessage> = [
        Message::user("q"),
        calls(&["a", "b"]),
        Message::user("interleaved"),
        result("b"),
        calls(&["c"]),
        result("c"),
    ]
    .into_iter()
    .enumerate()
    .map(|(index, message)| StoredMessage {
        sequence: index as u64 + 1,
        message,
        created_at_ms: 100 + index as i64,
    })
    .collect();
    let out = repair_stored(stored);
    let picture: Vec<(String, u64)> =
        shape(&out.iter().map(|m| m.message.clone()).collect::<Vec<_>>())
            .into_iter()
            .zip(out.iter().map(|m| m.sequence))
            .collect();
    let expected = [
        ("u:q", 1),
        ("a[a,b]", 2),
        ("t:a!", 2),
        ("t:b", 2),
        ("u:interleaved", 3),
        ("a[c]", 5),
        ("t:c", 6),
    ];
    let expected: Vec<(String, u64)> = expected
        .iter()
        .map(|(s, n)| ((*s).to_owned(), *n))
        .collect();
    assert_eq!(picture, expected);
    assert_eq!(out[2].created_at_ms, 101);
}

/// A small deterministic generator (xorshift), so the property test needs no crate and
/// every failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A well-formed run of a few turns; call ids come from a small pool so that runs and
/// turns repeat each other's ids, as interleaved runs on one script do.
fn random_run(rng: &mut Rng, tag: usize) -> Vec<Message> {
    let mut run = vec![Message::user(format!("task {tag}"))];
    for turn in 0..rng.below(4) {
        let count = 1 + rng.below(3);
        let mut ids: Vec<String> = Vec::new();
        while ids.len() < count {
            let id = format!("call_{}", rng.below(4));
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        run.push(calls(&refs));
        for id in &ids {
            run.push(result_text(id, &format!("run {tag} turn {turn} {id}")));
        }
    }
    run.push(Message::assistant(format!("done {tag}")));
    run
}

/// Merges `runs` in a random order that keeps each run's own order.
fn interleave(rng: &mut Rng, mut runs: Vec<Vec<Message>>) -> Vec<Message> {
    for run in &mut runs {
        run.reverse();
    }
    let mut out = Vec::new();
    loop {
        let live: Vec<usize> = (0..runs.len()).filter(|i| !runs[*i].is_empty()).collect();
        if live.is_empty() {
            return out;
        }
        let pick = live[rng.below(live.len())];
        out.push(runs[pick].pop().unwrap());
    }
}

/// Damages a stored conversation as crashes and races do: results lost, stored twice,
/// moved, or stray; a call's id repeated within its message.
fn damage(rng: &mut Rng, messages: &mut Vec<Message>) {
    for _ in 0..rng.below(4) {
        if messages.is_empty() {
            return;
        }
        let at = rng.below(messages.len());
        match rng.below(5) {
            0 if messages[at].role == MessageRole::Tool => {
                messages.remove(at);
            }
            1 if messages[at].role == MessageRole::Tool => {
                let copy = messages[at].clone();
                let to = rng.below(messages.len() + 1);
                messages.insert(to, copy);
            }
            2 => {
                let moved = messages.remove(at);
                let to = rng.below(messages.len() + 1);
                messages.insert(to, moved);
            }
            3 => {
                let to = rng.below(messages.len() + 1);
                messages.insert(to, result(&format!("stray_{}", rng.below(3))));
            }
            4 if !messages[at].tool_calls.is_empty() => {
                let first = messages[at].tool_calls[0].clone();
                messages[at].tool_calls.push(first);
            }
            _ => {}
        }
    }
}

#[test]
fn any_interleaving_of_runs_restores_well_formed() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut repaired_some = 0;
    for case in 0..3_000 {
        let runs: Vec<Vec<Message>> = (0..1 + rng.below(3))
            .map(|tag| random_run(&mut rng, tag))
            .collect();
        let mut stored = interleave(&mut rng, runs);
        if rng.chance(60) {
            damage(&mut rng, &mut stored);
        }
        let out = repair_sequence(stored.clone());
        assert!(
            is_well_formed(&out),
            "case {case}: {:?} -> {:?}",
            shape(&stored),
            shape(&out)
        );
        // Messages other than tool results are all kept, in order; only results and
        // repeated calls are dropped or moved, only interrupted results are added.
        let others = |m: &[Message]| -> Vec<String> {
            shape(m)
                .into_iter()
                .filter(|s| !s.starts_with("t:"))
                .map(|s| s.split('[').next().unwrap_or_default().to_owned())
                .collect()
        };
        assert_eq!(others(&out), others(&stored), "case {case}");
        for message in out.iter().filter(|m| m.role == MessageRole::Tool) {
            assert!(
                message.text() == INTERRUPTED_RESULT || stored.contains(message),
                "case {case}: invented {message:?}"
            );
        }
        // Repair is idempotent, and leaves a well-formed conversation alone.
        assert_eq!(repair_sequence(out.clone()), out, "case {case}");
        if is_well_formed(&stored) {
            assert_eq!(out, stored, "case {case}");
        } else {
            repaired_some += 1;
        }
    }
    // The generator does produce malformed sessions (most of them).
    assert!(repaired_some > 1_500, "{repaired_some}");
}

#[test]
fn the_invariant_check_rejects_each_malformed_shape() {
    assert!(!is_well_formed(&[result("a")]));
    assert!(!is_well_formed(&[calls(&["a"])]));
    assert!(!is_well_formed(&[
        calls(&["a", "b"]),
        result("b"),
        result("a")
    ]));
    assert!(!is_well_formed(&[
        calls(&["a"]),
        Message::user("x"),
        result("a")
    ]));
    assert!(!is_well_formed(&[calls(&["a"]), result("a"), result("a")]));
    assert!(!is_well_formed(&[
        calls(&["a", "a"]),
        result("a"),
        result("a")
    ]));
    assert!(is_well_formed(&[
        calls(&["a"]),
        result("a"),
        calls(&["a"]),
        result("a")
    ]));
}
