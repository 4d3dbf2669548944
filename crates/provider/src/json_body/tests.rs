//! `to_vec` writes serde_json's bytes: for strings of every kind at every offset, for
//! numbers, for serde's other shapes, for the recorded fixtures, and (through
//! [`assert_same_bytes`] and [`rich_request`], from each client's tests) for every
//! client's request bodies.

use std::collections::BTreeMap;

use oxydra_types::{CallId, ContentPart, Message, ToolCall, ToolSchema};
use serde::Serialize;
use serde_json::{Value, json};

use super::*;
use crate::request::{ProviderRequest, ToolChoice};

/// Panics unless `to_vec` and `serde_json::to_vec` write the same bytes for `value`.
#[track_caller]
pub(crate) fn assert_same_bytes<T: Serialize + ?Sized>(value: &T) {
    let expected = serde_json::to_vec(value).unwrap();
    let written = to_vec(value).unwrap();
    if written != expected {
        panic!(
            "json_body wrote\n{}\nserde_json wrote\n{}",
            String::from_utf8_lossy(&written),
            String::from_utf8_lossy(&expected)
        );
    }
}

/// A small deterministic generator (xorshift64*), so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Characters whose escaping could differ: every ASCII one (controls, `"`, `\`, `/`,
/// DEL), and UTF-8 of 2, 3 and 4 bytes, among them the line and paragraph separators
/// JavaScript treats as line ends, the BOM, noncharacters and the last code point.
fn interesting_chars() -> Vec<char> {
    let mut chars: Vec<char> = (0u8..=0x7f).map(char::from).collect();
    chars.extend([
        '\u{80}',
        '\u{a0}',
        'é',
        '\u{7ff}',
        '\u{800}',
        '€',
        '\u{2028}',
        '\u{2029}',
        '\u{fdd0}',
        '\u{feff}',
        '\u{fffd}',
        '\u{ffff}',
        '\u{10000}',
        '😀',
        '👩',
        '\u{10ffff}',
    ]);
    chars
}

/// A random string of up to `max` characters, mostly from [`interesting_chars`].
fn random_string(rng: &mut Rng, chars: &[char], max: usize) -> String {
    let len = rng.below(max + 1);
    (0..len)
        .map(|_| match rng.below(4) {
            0 => char::from(b'a' + rng.below(26) as u8),
            _ => chars[rng.below(chars.len())],
        })
        .collect()
}

#[test]
fn every_escaped_byte_at_every_offset_is_written_as_serde_json_writes_it() {
    // Both sides of every 16- and 32-byte boundary, at the start, the end and inside.
    let escaped: Vec<u8> = (0u8..0x20).chain([b'"', b'\\', b'/', 0x7f]).collect();
    for &byte in &escaped {
        for len in 1..=70 {
            for at in 0..len {
                let mut bytes = vec![b'a'; len];
                bytes[at] = byte;
                assert_same_bytes(std::str::from_utf8(&bytes).unwrap());
            }
        }
    }
}

#[test]
fn multibyte_characters_across_every_boundary_are_written_as_serde_json_writes_them() {
    for ch in ['é', '€', '\u{2028}', '\u{2029}', '😀', '\u{10ffff}'] {
        for before in 0..=66 {
            for after in [0, 1, 2, 31, 32, 33] {
                let text = format!("{}{ch}{}", "x".repeat(before), "\"".repeat(after));
                assert_same_bytes(&text);
            }
        }
    }
}

#[test]
fn random_strings_are_written_as_serde_json_writes_them() {
    let chars = interesting_chars();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..20_000 {
        let max = if round % 100 == 0 { 5_000 } else { 120 };
        let text = random_string(&mut rng, &chars, max);
        assert_same_bytes(&text);
        // The same string as a map key, as a value beside other values, in a struct.
        let mut map = BTreeMap::new();
        map.insert(text.clone(), vec![text.clone()]);
        assert_same_bytes(&map);
        assert_same_bytes(&json!({ text.as_str(): [text, 1, null] }));
    }
}

#[test]
fn every_char_alone_and_as_a_char_is_written_as_serde_json_writes_it() {
    for ch in interesting_chars() {
        assert_same_bytes(&ch);
        assert_same_bytes(&ch.to_string());
        assert_same_bytes(&ch.to_string().repeat(100));
    }
}

#[test]
fn long_strings_are_written_as_serde_json_writes_them() {
    let chars = interesting_chars();
    let mut rng = Rng(42);
    let mixed: String = (0..1 << 20)
        .map(|_| match rng.below(64) {
            0 => chars[rng.below(chars.len())],
            _ => char::from(b' ' + rng.below(95) as u8),
        })
        .collect();
    assert_same_bytes(&mixed);
    // Worst cases for the output's growth: every byte escaped, to 2 and to 6 bytes.
    assert_same_bytes(&"\"".repeat(100_000));
    assert_same_bytes(&"\u{1}".repeat(100_000));
    assert_same_bytes(&"😀".repeat(100_000));
    assert_same_bytes(&"a".repeat(1 << 20));
}

#[test]
fn numbers_are_written_as_serde_json_writes_them() {
    let f32s = [
        0.0f32,
        -0.0,
        0.1,
        0.2,
        0.7,
        1.0,
        1.5,
        2.0,
        100.0,
        1e7,
        1e-7,
        123_456.79,
        f32::MIN_POSITIVE,
        1e-45,
        f32::MAX,
        f32::MIN,
        f32::EPSILON,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    for value in f32s {
        assert_same_bytes(&value);
        assert_same_bytes(&Some(value));
    }
    let mut rng = Rng(7);
    for _ in 0..20_000 {
        let bits = rng.next();
        assert_same_bytes(&f64::from_bits(bits));
        assert_same_bytes(&f32::from_bits(bits as u32));
        assert_same_bytes(&(bits as i64));
        assert_same_bytes(&bits);
        // Shortest forms of "round" values.
        assert_same_bytes(&((bits % 100_000) as f64 / 1_000.0));
        assert_same_bytes(&((bits % 100_000) as f32 / 100.0));
    }
    assert_same_bytes(&[u64::MAX, 0]);
    assert_same_bytes(&[i64::MIN, i64::MAX]);
    assert_same_bytes(&[i128::MIN, i128::MAX]);
    assert_same_bytes(&u128::MAX);
    assert_same_bytes(&[f64::MAX, f64::MIN_POSITIVE, 5e-324, 1e300, 1e21, 1e-5, 0.3]);
    assert_same_bytes(&json!([1, -1, 0.5, 1e100, u64::MAX, i64::MIN, -0.0]));
}

#[derive(Serialize)]
enum Shape<'a> {
    Unit,
    Newtype(&'a str),
    Tuple(u8, &'a str),
    Struct {
        #[serde(rename = "type")]
        kind: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        absent: Option<u8>,
        present: Option<u8>,
    },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Tagged<'a> {
    ToolUse { id: &'a str, input: &'a Value },
}

#[derive(Serialize)]
struct Wrapper<'a>(&'a str);

#[test]
fn serdes_other_shapes_are_written_as_serde_json_writes_them() {
    let input = json!({"b": [true, false, null], "a": {"": ""}});
    assert_same_bytes(&(
        Shape::Unit,
        Shape::Newtype("x\"y"),
        Shape::Tuple(1, "\n"),
        Shape::Struct {
            kind: "t",
            absent: None,
            present: None,
        },
    ));
    assert_same_bytes(&Tagged::ToolUse {
        id: "toolu_1",
        input: &input,
    });
    assert_same_bytes(&Wrapper("\u{7}"));
    assert_same_bytes(&());
    assert_same_bytes(&Vec::<u8>::new());
    assert_same_bytes(&BTreeMap::<String, u8>::new());
    assert_same_bytes(&json!({}));
    assert_same_bytes(&json!([]));
    assert_same_bytes(&b"bytes\0"[..]);
    let numeric_keys: BTreeMap<u32, &str> = [(1, "a"), (20, "b")].into_iter().collect();
    assert_same_bytes(&numeric_keys);
    let signed_keys: BTreeMap<i64, bool> = [(-5, true), (i64::MAX, false)].into_iter().collect();
    assert_same_bytes(&signed_keys);
    let char_keys: BTreeMap<char, u8> = [('"', 1), ('\n', 2)].into_iter().collect();
    assert_same_bytes(&char_keys);
}

/// JSON texts among the recorded fixtures: the `.json` files and the `data:` lines of
/// the streams, each parsed into a [`Value`].
fn fixture_values() -> Vec<Value> {
    let mut values = Vec::new();
    let mut folders = vec![oxydra_test_support::fixtures_dir()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            if let Ok(value) = serde_json::from_str::<Value>(&text) {
                values.push(value);
            }
            for line in text.lines() {
                let data = line.strip_prefix("data:").unwrap_or(line).trim();
                if let Ok(value) = serde_json::from_str::<Value>(data) {
                    values.push(value);
                }
            }
        }
    }
    values
}

#[test]
fn recorded_fixtures_are_written_as_serde_json_writes_them() {
    let values = fixture_values();
    assert!(values.len() > 500, "{} values", values.len());
    for value in &values {
        assert_same_bytes(value);
    }
}

/// A request with some of everything a client writes: system prompts, a user message
/// with an image, assistant text with tool calls, tool results (one with an image),
/// strings of every kind, a tool schema with numbers, a temperature and a token limit.
pub(crate) fn rich_request() -> ProviderRequest {
    let chars = interesting_chars();
    let mut rng = Rng(0xDEAD_BEEF);
    let mut hard = || random_string(&mut rng, &chars, 300);
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let image = ContentPart::Image {
        media_type: "image/png".to_owned(),
        data: png.to_owned(),
    };
    let calls = vec![
        ToolCall::new(
            CallId::from("call_1"),
            "file_read",
            r#"{"path":"a \"b\".txt"}"#,
        ),
        ToolCall::new(CallId::from("call_2"), "search", hard()),
    ];
    let messages = vec![
        Message::system(format!("You are terse.\n{}", hard())),
        Message::system(hard()),
        Message::user(hard()).with_parts(vec![image.clone()]),
        Message::assistant_with_tool_calls(Some(hard()), calls),
        Message::tool_result(CallId::from("call_1"), "file_read", hard()),
        Message::tool_result(CallId::from("call_2"), "search", hard()).with_parts(vec![image]),
        Message::assistant(hard()),
        Message::user("\u{2028}\u{2029}\t\r\n\"\\/\u{0}\u{1f}\u{7f}😀"),
    ];
    let mut request = ProviderRequest::new("gpt-4o-mini", messages);
    request.temperature = Some(0.7);
    request.max_tokens = Some(1_024);
    request.tool_choice = ToolChoice::Auto;
    request.tools = vec![
        ToolSchema::new(
            "file_read",
            hard(),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": hard()},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 2_000},
                    "ratio": {"type": "number", "default": 0.25, "maximum": 1e300}
                },
                "required": ["path"]
            }),
        ),
        ToolSchema::new("search", "Searches.", json!({"type": "object"})),
    ];
    request
}

/// [`rich_request`] with each tool choice, and with other temperatures.
pub(crate) fn rich_requests() -> Vec<ProviderRequest> {
    let base = rich_request();
    let mut requests = Vec::new();
    let choices = [
        ToolChoice::Auto,
        ToolChoice::None,
        ToolChoice::Required,
        ToolChoice::Tool("search".to_owned()),
    ];
    for (choice, temperature) in choices.into_iter().zip([0.7, 0.0, 1.0, 0.1]) {
        let mut request = base.clone();
        request.tool_choice = choice;
        request.temperature = Some(temperature);
        requests.push(request);
    }
    let mut bare = base;
    bare.tools.clear();
    bare.temperature = None;
    bare.max_tokens = None;
    requests.push(bare);
    requests
}

#[test]
fn openai_chat_bodies_are_written_as_serde_json_writes_them() {
    for request in rich_requests() {
        for effort in [None, Some(crate::ReasoningEffort::High)] {
            let mut config = crate::ProviderConfig::new("http://127.0.0.1:1/v1", None);
            config.reasoning_effort = effort;
            let provider = crate::OpenAiProvider::new(config);
            for stream in [false, true] {
                assert_same_bytes(&provider.request_body(&request, stream));
            }
        }
    }
}
