//! The cost of writing a request's body: the last (21st) request of a 20-turn
//! conversation of 8 parallel `file_read` calls a turn, as the OpenAI
//! chat-completions client sends it (a system prompt, the user's prompt, 20 assistant
//! messages of 8 tool calls each, 160 tool results of 1–2 KB), written by
//! `serde_json::to_vec` (what reqwest's `json` does, the clients' way until issue 50)
//! and by `oxydra_provider::json_body::to_vec` (what they use now). Two kinds of tool
//! result: `code`, source-like lines with quotes, backslashes and tabs (a character to
//! escape every 17 bytes), and `notes`, the lines of the cost scenario's notes
//! (`oxydra_test_support::file_read_scenario`: a newline every ~31 bytes).
//!
//! For counting instructions, `REQUEST_BODY_COUNT=TEXT:ENCODER:N` (`code` or `notes`;
//! `serde_json` or `json_body`) writes the body N times with that encoder and exits,
//! without criterion: the difference between two counts under
//! `valgrind --tool=callgrind` (e.g. N = 1 and N = 11) over the difference in N is the
//! cost of one body.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    missing_docs
)]

use criterion::{Criterion, Throughput, criterion_group};
use oxydra_provider::{OpenAiProvider, ProviderConfig, ProviderRequest, json_body};
use oxydra_types::{CallId, Message, ToolCall, ToolSchema};
use std::hint::black_box;
use std::time::Duration;

const TURNS: usize = 20;
const CALLS_PER_TURN: usize = 8;

/// Lines of the kinds a `file_read` returns: code with quotes, backslashes and tabs,
/// prose, a little non-ASCII.
const LINES: &[&str] = &[
    "    let value = map.get(\"key\").copied().unwrap_or_default();",
    "\tif path.ends_with(\"\\\\\") { return Err(Error::Trailing); }",
    "// The reader keeps the last 4 KiB so a split UTF-8 sequence is never cut.",
    "fn parse_line(line: &str) -> Option<(u32, &str)> {",
    "note: nothing urgent; the café's naïve résumé — 3 items, ✓ done",
    "        \"name\": \"file_read\", \"offset\": 12, \"limit\": 200,",
    "",
    "}",
    "The configuration is read once at start-up and validated against the schema.",
    "    assert_eq!(format!(\"{x:?}\"), \"Some(1)\");",
];

/// A pseudo-random text of about `bytes` bytes, of [`LINES`] in an order set by `seed`.
fn code(seed: usize, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 128);
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    while out.len() < bytes {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        out.push_str(LINES[(state >> 33) % LINES.len()]);
        out.push('\n');
    }
    out
}

/// About `bytes` bytes of the scenario's note lines, of file `seed % 8`.
fn notes(seed: usize, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 64);
    let mut line = 1;
    while out.len() < bytes {
        out.push_str(&format!("note {} line {line}: nothing urgent\n", seed % 8));
        line += 1;
    }
    out
}

/// The 21st request of the conversation, its tool results written by `text`.
fn request(text: Text) -> ProviderRequest {
    let mut messages = vec![
        Message::system(code(0, 3_000)),
        Message::user("Read every note, twenty times, then summarise."),
    ];
    for turn in 0..TURNS {
        let calls: Vec<ToolCall> = (0..CALLS_PER_TURN)
            .map(|call| {
                ToolCall::new(
                    CallId::from(format!("call_{turn}_{call}")),
                    "file_read",
                    format!(r#"{{"path":"notes/file{call}.txt","offset":{}}}"#, turn + 1),
                )
            })
            .collect();
        messages.push(Message::assistant_with_tool_calls(None, calls));
        for call in 0..CALLS_PER_TURN {
            let seed = turn * CALLS_PER_TURN + call + 1;
            messages.push(Message::tool_result(
                CallId::from(format!("call_{turn}_{call}")),
                "file_read",
                text(seed, 1_000 + (seed * 37) % 1_000),
            ));
        }
    }
    let mut request = ProviderRequest::new("gpt-4o-mini", messages);
    request.temperature = Some(0.2);
    request.max_tokens = Some(4_096);
    request.tools = vec![ToolSchema::new(
        "file_read",
        "Reads a UTF-8 text file of the workspace, from a line on.",
        serde_json::json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Relative to the workspace."},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": 2000}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    )];
    request
}

fn encode(encoder: &str, body: &impl serde::Serialize) -> Vec<u8> {
    match encoder {
        "serde_json" => serde_json::to_vec(body).unwrap(),
        "json_body" => json_body::to_vec(body).unwrap(),
        other => panic!("unknown encoder {other}: serde_json or json_body"),
    }
}

/// Writes a tool result's text from a seed and a length in bytes.
type Text = fn(usize, usize) -> String;

/// The tool results' kinds, by name.
fn texts() -> [(&'static str, Text); 2] {
    [("code", code), ("notes", notes)]
}

fn request_body(c: &mut Criterion) {
    let provider = OpenAiProvider::new(ProviderConfig::new("http://127.0.0.1:1/v1", None));
    for (name, text) in texts() {
        let request = request(text);
        let body = provider.request_body(&request, true);
        let bytes = encode("serde_json", &body);
        assert_eq!(encode("json_body", &body), bytes);
        let mut group = c.benchmark_group("request_body");
        group.sample_size(30);
        group.measurement_time(Duration::from_secs(3));
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        for encoder in ["serde_json", "json_body"] {
            group.bench_function(format!("openai_21st_turn_{name}_{encoder}"), |b| {
                b.iter(|| encode(encoder, black_box(&body)).len());
            });
        }
        group.finish();
    }
}

criterion_group!(benches, request_body);

fn main() {
    if let Ok(count) = std::env::var("REQUEST_BODY_COUNT") {
        let mut fields = count.split(':');
        let (Some(kind), Some(encoder), Some(times)) =
            (fields.next(), fields.next(), fields.next())
        else {
            panic!("REQUEST_BODY_COUNT is TEXT:ENCODER:N");
        };
        let times: usize = times.parse().expect("N");
        let (_, text) = texts()
            .into_iter()
            .find(|(name, _)| *name == kind)
            .expect("TEXT is code or notes");
        let provider = OpenAiProvider::new(ProviderConfig::new("http://127.0.0.1:1/v1", None));
        let request = request(text);
        let body = provider.request_body(&request, true);
        let mut total = 0;
        for _ in 0..times {
            total += encode(encoder, black_box(&body)).len();
        }
        println!("{times} bodies, {total} bytes");
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
