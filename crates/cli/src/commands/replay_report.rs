//! The report of `oxydra replay`: the two runs side by side as text (every cell
//! through the terminal sanitizer), or one `replay_report` JSON line.

use std::fmt::Write as _;
use std::io::Write as _;

use oxydra::runtime::replay::{Difference, FirstDifference, ReplayReport, RunSide, TurnRecord};
use oxydra::serde_json;
use unicode_width::UnicodeWidthChar;

use crate::args::OutputFormat;
use crate::error::CliError;
use crate::terminal_text::{escape_json, one_line};

/// Display width of a column of the side-by-side table.
const COLUMN: usize = 36;
/// Display width of the row labels.
const LABEL: usize = 16;

/// Prints `report` in `format`.
pub fn print(report: &ReplayReport, format: OutputFormat) -> Result<(), CliError> {
    let text = match format {
        OutputFormat::Jsonl => json_line(report)?,
        OutputFormat::Text => side_by_side(report),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)
}

/// The report as one JSON line: `{"type":"replay_report","identical":…, …}`.
fn json_line(report: &ReplayReport) -> Result<String, CliError> {
    let mut value = serde_json::to_value(report)
        .map_err(|error| CliError::Setup(format!("cannot write the report: {error}")))?;
    if let Some(object) = value.as_object_mut() {
        object.insert("type".into(), "replay_report".into());
        object.insert("identical".into(), report.identical().into());
    }
    Ok(format!("{}\n", escape_json(&value.to_string())))
}

/// The report as a table: totals, then each turn's calls and answers, then the
/// verdict.
pub fn side_by_side(report: &ReplayReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "replay of {} as {}, from turn {}",
        one_line(report.original.session_id.as_str()),
        one_line(report.replay.session_id.as_str()),
        report.from_turn
    );
    row(&mut out, "", "original", "replay");
    let (a, b) = (&report.original, &report.replay);
    row(
        &mut out,
        "turns",
        &a.turns.len().to_string(),
        &b.turns.len().to_string(),
    );
    row(
        &mut out,
        "calls",
        &a.calls.to_string(),
        &b.calls.to_string(),
    );
    row(&mut out, "tokens in/out", &tokens(a), &tokens(b));
    row(&mut out, "cost", &cost(a), &cost(b));
    let longest = a.turns.len().max(b.turns.len());
    for index in 0..longest {
        turn_rows(&mut out, a.turns.get(index), b.turns.get(index));
    }
    if report.unrecorded_calls > 0 {
        let _ = writeln!(
            out,
            "calls no recording matched: {}",
            report.unrecorded_calls
        );
    }
    match &report.first_difference {
        None => {
            out.push_str("identical: the replay made the same calls and gave the same answers\n")
        }
        Some(first) => {
            let _ = writeln!(out, "first difference: {}", difference(first));
        }
    }
    out
}

fn turn_rows(out: &mut String, a: Option<&TurnRecord>, b: Option<&TurnRecord>) {
    let number = a.or(b).map_or(0, |turn| turn.turn);
    let calls = |turn: Option<&TurnRecord>| turn.map_or(0, |t| t.calls.len());
    let call = |turn: Option<&TurnRecord>, index: usize| {
        turn.and_then(|t| t.calls.get(index))
            .map(|call| format!("{} {}", call.name, call.arguments))
            .unwrap_or_default()
    };
    for index in 0..calls(a).max(calls(b)) {
        let label = format!("turn {number} call {}", index + 1);
        row(out, &label, &call(a, index), &call(b, index));
    }
    let answer = |turn: Option<&TurnRecord>| {
        turn.map_or_else(
            || "(no such turn)".to_owned(),
            |t| t.answer.clone().unwrap_or_else(|| "(no answer)".into()),
        )
    };
    row(
        out,
        &format!("turn {number} answer"),
        &answer(a),
        &answer(b),
    );
}

fn tokens(side: &RunSide) -> String {
    match (side.input_tokens, side.output_tokens) {
        (Some(input), Some(output)) => format!("{input}/{output}"),
        _ => "not recorded".into(),
    }
}

fn cost(side: &RunSide) -> String {
    side.cost
        .map_or_else(|| "not recorded".into(), |cost| format!("${cost:.4}"))
}

/// What differs first, in words.
fn difference(first: &FirstDifference) -> String {
    let turn = first.turn;
    let shown = |text: &Option<String>| {
        text.as_deref()
            .map_or_else(|| "none".to_owned(), |t| one_line(t).into_owned())
    };
    match &first.what {
        Difference::DifferentCall {
            index,
            original,
            replay,
        } => format!(
            "turn {turn}, call {}: different call (original {}, replay {})",
            index + 1,
            shown(original),
            shown(replay)
        ),
        Difference::DifferentArguments {
            index,
            name,
            original,
            replay,
        } => format!(
            "turn {turn}, call {}: different arguments to {} (original {}, replay {})",
            index + 1,
            one_line(name),
            one_line(original),
            one_line(replay)
        ),
        Difference::DifferentAnswer { original, replay } => format!(
            "turn {turn}: different answer (original {:?}, replay {:?})",
            shown(original),
            shown(replay)
        ),
        Difference::MissingTurn { in_original } => format!(
            "turn {turn}: only the {} has it",
            if *in_original { "original" } else { "replay" }
        ),
    }
}

/// One row: the label and the two cells, each sanitized to one line and cut to its
/// column.
fn row(out: &mut String, label: &str, left: &str, right: &str) {
    let _ = writeln!(
        out,
        "{}  {}  {}",
        cell(label, LABEL),
        cell(left, COLUMN),
        one_line(&cut(right, COLUMN))
    );
}

fn cell(text: &str, width: usize) -> String {
    let shown = one_line(&cut(text, width)).into_owned();
    let used: usize = shown.chars().filter_map(UnicodeWidthChar::width).sum();
    format!("{shown}{}", " ".repeat(width.saturating_sub(used)))
}

/// `text` cut to `width` columns, with `…` where it was cut; hidden characters count
/// as the escapes [`one_line`] writes for them (cut after the escaping).
fn cut(text: &str, width: usize) -> String {
    let escaped = one_line(text);
    let mut used = 0;
    let mut kept = String::new();
    for c in escaped.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width.saturating_sub(1) {
            kept.push('…');
            return kept;
        }
        used += w;
        kept.push(c);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra::runtime::replay::CallRecord;
    use oxydra::types::SessionId;

    fn side(answer: &str) -> RunSide {
        RunSide {
            session_id: SessionId::from("ses_\u{1b}[2Jx"),
            turns: vec![TurnRecord {
                turn: 1,
                calls: vec![CallRecord {
                    name: "file_write".into(),
                    arguments: "{\"content\":\"\u{1b}]0;pwned\u{7}\"}".into(),
                }],
                answer: Some(answer.into()),
            }],
            calls: 1,
            input_tokens: None,
            output_tokens: None,
            cost: None,
        }
    }

    #[test]
    fn no_escape_sequence_of_the_model_reaches_the_table() {
        let report = ReplayReport {
            from_turn: 1,
            original: side("done \u{1b}[31mred"),
            replay: side("done \u{9b}31m\u{202e}"),
            first_difference: Some(FirstDifference {
                turn: 1,
                what: Difference::DifferentAnswer {
                    original: Some("\u{1b}[31m".into()),
                    replay: Some("b\u{7}".into()),
                },
            }),
            unrecorded_calls: 0,
        };
        let text = side_by_side(&report);
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(!text.contains('\u{202e}'), "{text:?}");
        assert!(text.contains("\\u{1b}[31m"), "{text}");
        assert!(
            text.contains("first difference: turn 1: different answer"),
            "{text}"
        );
        let line = json_line(&report).unwrap();
        assert!(!line.trim_end().chars().any(char::is_control), "{line:?}");
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["type"], "replay_report");
        assert_eq!(value["identical"], false);
        assert_eq!(value["first_difference"]["kind"], "different_answer");
    }

    #[test]
    fn long_cells_are_cut_to_their_column() {
        let long = "x".repeat(200);
        let shown = cut(&long, COLUMN);
        assert_eq!(shown.chars().count(), COLUMN);
        assert!(shown.ends_with('…'));
        assert_eq!(cut("short", COLUMN), "short");
    }
}
