//! `oxydra scrub [FILE] [--json]`: redact secrets from a file (or stdin) to stdout.

use std::io::{Read, Write};
use std::ops::Range;

use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use serde_json::json;

use crate::args::ScrubArgs;
use crate::error::CliError;
use crate::exit_code::Exit;

/// Runs `oxydra scrub`.
pub fn run(args: &ScrubArgs) -> Result<Exit, CliError> {
    let input = match &args.file {
        Some(path) => std::fs::read(path).map_err(|source| CliError::ReadFile {
            path: path.clone(),
            source,
        })?,
        None => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut bytes)
                .map_err(|source| CliError::Stdio {
                    what: "cannot read stdin",
                    source,
                })?;
            bytes
        }
    };
    let rendered = render(&input, args.json);
    let mut out = std::io::stdout().lock();
    match out.write_all(&rendered).and_then(|()| out.flush()) {
        Ok(()) => Ok(Exit::Done),
        // The reader went away (`oxydra scrub big.log | head`): what it wanted it got.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(Exit::Done),
        Err(error) => Err(CliError::stdout(error)),
    }
}

/// One redaction: a byte range of the input and the kind of secret found there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteRedaction {
    /// Byte offsets into the input.
    pub range: Range<usize>,
    /// What was found (`openai_api_key`, `password`, …).
    pub kind: String,
}

/// The input with its secrets redacted, byte for byte otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScrubbedBytes {
    /// The output: every byte of the input outside a redaction, unchanged.
    pub bytes: Vec<u8>,
    /// Where the redactions are in the input, in order.
    pub redactions: Vec<ByteRedaction>,
}

/// Scrubs arbitrary bytes. Each run of valid UTF-8 is scrubbed as text; bytes that are
/// not UTF-8 (Latin-1 text, binary data) pass through unchanged and end a run, as a
/// secret never spans them. Ranges are byte offsets into `input`.
pub fn scrub_bytes(input: &[u8]) -> ScrubbedBytes {
    let mut bytes = Vec::with_capacity(input.len());
    let mut redactions = Vec::new();
    let mut offset = 0;
    let mut rest = input;
    while !rest.is_empty() {
        let (text, invalid) = match std::str::from_utf8(rest) {
            Ok(text) => (text, 0),
            Err(error) => {
                let valid = error.valid_up_to();
                let invalid = error.error_len().unwrap_or(rest.len() - valid);
                let text = rest
                    .get(..valid)
                    .and_then(|prefix| std::str::from_utf8(prefix).ok())
                    .unwrap_or("");
                (text, invalid)
            }
        };
        let scrubbed = oxydra::scrubbing::scrub(text);
        redactions.extend(scrubbed.redactions.iter().map(|redaction| ByteRedaction {
            range: redaction.range.start + offset..redaction.range.end + offset,
            kind: redaction.kind.as_str().to_owned(),
        }));
        bytes.extend_from_slice(scrubbed.text.as_bytes());
        let consumed = text.len() + invalid;
        bytes.extend_from_slice(rest.get(text.len()..consumed).unwrap_or_default());
        offset += consumed;
        rest = rest.get(consumed..).unwrap_or_default();
    }
    ScrubbedBytes { bytes, redactions }
}

/// The scrubbed input, or (with `json`) `{"text", "redactions":[{start,end,kind}]}` and
/// a newline. Input that is not UTF-8 comes out byte for byte; in JSON, whose strings
/// cannot hold such bytes, `text` is then decoded lossily for reading and `base64`
/// holds the exact output.
pub fn render(input: &[u8], as_json: bool) -> Vec<u8> {
    let scrubbed = scrub_bytes(input);
    if !as_json {
        return scrubbed.bytes;
    }
    let redactions: Vec<serde_json::Value> = scrubbed
        .redactions
        .iter()
        .map(|redaction| {
            json!({
                "start": redaction.range.start,
                "end": redaction.range.end,
                "kind": redaction.kind,
            })
        })
        .collect();
    let value = match String::from_utf8(scrubbed.bytes) {
        Ok(text) => json!({ "text": text, "redactions": redactions }),
        Err(not_utf8) => {
            let exact = not_utf8.into_bytes();
            json!({
                "text": String::from_utf8_lossy(&exact),
                "base64": BASE64_STANDARD.encode(&exact),
                "redactions": redactions,
            })
        }
    };
    format!("{value}\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_located() {
        let input = "user=bob\napi_key: \"sk-proj-4f9aQ7zL2mX8vB1nR6tY3wK5\"\n";
        let text = String::from_utf8(render(input.as_bytes(), false)).unwrap();
        assert!(!text.contains("sk-proj-4f9aQ7zL2mX8vB1nR6tY3wK5"), "{text}");
        assert!(text.contains("user=bob"));
        let value: serde_json::Value =
            serde_json::from_slice(&render(input.as_bytes(), true)).unwrap();
        let redactions = value["redactions"].as_array().unwrap();
        assert!(!redactions.is_empty());
        let start = redactions[0]["start"].as_u64().unwrap() as usize;
        let end = redactions[0]["end"].as_u64().unwrap() as usize;
        assert!(input[start..end].contains("4f9aQ7zL2mX8"));
        assert!(redactions[0]["kind"].is_string());
        assert_eq!(render(b"nothing here\n", false), b"nothing here\n");
    }

    #[test]
    fn bytes_that_are_not_utf8_pass_through_unchanged() {
        // 2,000 bytes of every value, Latin-1 text, and a secret between invalid bytes.
        let binary: Vec<u8> = (0..2000_u32).map(|i| (i * 37 % 256) as u8).collect();
        assert_eq!(render(&binary, false).len(), binary.len());
        let latin1 = b"caf\xe9 cr\xe8me\n".to_vec();
        assert_eq!(render(&latin1, false), latin1);
        let secret = "sk-proj-4f9aQ7zL2mX8vB1nR6tY3wK5";
        let mut input = b"\xff\xfe caf\xe9 api_key=".to_vec();
        let start = input.len();
        input.extend_from_slice(secret.as_bytes());
        input.extend_from_slice(b"\n\xe9 end");
        let scrubbed = scrub_bytes(&input);
        assert!(
            !scrubbed
                .bytes
                .windows(secret.len())
                .any(|w| w == secret.as_bytes())
        );
        assert!(scrubbed.bytes.starts_with(b"\xff\xfe caf\xe9 api_key="));
        assert!(scrubbed.bytes.ends_with(b"\n\xe9 end"));
        let redaction = &scrubbed.redactions[0];
        assert!(redaction.range.start >= start - "api_key=".len());
        assert!(redaction.range.end <= start + secret.len());
        assert_eq!(
            &input[redaction.range.clone()].last(),
            &secret.as_bytes().last()
        );
        // JSON keeps the exact bytes in base64 and readable text beside them.
        let value: serde_json::Value = serde_json::from_slice(&render(&input, true)).unwrap();
        let exact = BASE64_STANDARD
            .decode(value["base64"].as_str().unwrap())
            .unwrap();
        assert_eq!(exact, scrubbed.bytes);
        assert!(value["text"].as_str().unwrap().contains("caf\u{fffd}"));
    }
}
