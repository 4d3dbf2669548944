//! Private-key blocks: `-----BEGIN <label>-----`, a base64 body, `-----END <label>-----`.
//!
//! A block is bounded: the BEGIN label must name a private key (`PRIVATE KEY`,
//! `RSA PRIVATE KEY`, `OPENSSH PRIVATE KEY`, `PGP PRIVATE KEY BLOCK`, …), the body may
//! hold only base64, blanks, line breaks (also written `\n` inside a string), header
//! lines (`Proc-Type: …`, `DEK-Info: …`, `Comment: …`, `Version: …`) and string
//! quoting (`"…" +`) — and it ends where anything else starts. The END line must carry
//! the same label, with a dash or more on each side (a hand-edited block has four or
//! six). A block whose END line is missing or malformed (a truncated output, another
//! label) loses its header and body up to where the body stops, and nothing below: it
//! never pairs with an END line further down. A body has at least
//! [`MIN_BODY`] base64 characters (`-----BEGIN PRIVATE KEY-----\nanything\n…` is an
//! example, not a key) and at most [`MAX_BLOCK`] bytes are looked at.

use std::ops::Range;

use memchr::memmem;

use crate::merge::Candidate;
use crate::redaction::RedactionKind;

const BEGIN: &str = "-----BEGIN ";
/// Base64 characters a key body has at least (real keys have hundreds; a truncated
/// output may show only the first line).
const MIN_BODY: usize = 8;
/// Longest block considered (an RSA-16384 key in PEM is about 12 KiB).
pub(crate) const MAX_BLOCK: usize = 64 * 1024;
/// Longest label (`ENCRYPTED PRIVATE KEY`, `PGP PRIVATE KEY BLOCK`).
const MAX_LABEL: usize = 64;

/// Pushes a candidate for every private-key block in `text`.
pub(crate) fn collect(text: &str, priority: u16, out: &mut Vec<Candidate>) {
    let bytes = text.as_bytes();
    let mut done = 0;
    for (start, label, body_start) in begin_lines(text) {
        if start < done || !label.contains("PRIVATE KEY") {
            continue;
        }
        let body_end = body_end(bytes, body_start);
        let body = text.get(body_start..body_end).unwrap_or_default();
        let base64 = body
            .bytes()
            .filter(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/'))
            .count();
        // `anything`, `your key here`: an example, not a key.
        let lowercase_words = body
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_whitespace() || b == b'\\');
        if base64 < MIN_BODY || lowercase_words {
            continue;
        }
        let end = end_line(text, body_end, label).unwrap_or_else(|| trim_body_end(bytes, body_end));
        out.push(Candidate {
            range: start..end,
            kind: RedactionKind::PrivateKey,
            priority,
        });
        done = end;
    }
}

/// A label of a block that holds public data: a certificate, a certificate request
/// or revocation list, a public key, a signature, parameters (RFC 7468's types and
/// OpenPGP's armor: `CERTIFICATE`, `X509 CRL`, `NEW CERTIFICATE REQUEST`, `PUBLIC
/// KEY`, `RSA PUBLIC KEY`, `PGP PUBLIC KEY BLOCK`, `PGP SIGNATURE`, `DH PARAMETERS`,
/// `PKCS7`, `CMS`). Nothing private or encrypted.
fn is_public_label(label: &str) -> bool {
    let public = [
        "CERTIFICATE",
        "CRL",
        "CERTIFICATE REQUEST",
        "PUBLIC KEY",
        "PUBLIC KEY BLOCK",
        "SIGNATURE",
        "PARAMETERS",
    ]
    .iter()
    .any(|end| label.ends_with(end))
        || matches!(label, "PKCS7" | "CMS");
    public
        && !label.contains("PRIVATE")
        && !label.contains("ENCRYPTED")
        && !label.contains("SECRET")
}

/// The whole blocks of public data in `text` (see [`is_public_label`]), each from
/// its BEGIN line to the END line with the same label: the entropy layer does not
/// judge the runs of a certificate's body. A BEGIN line without its END line marks
/// nothing, so it cannot hide what follows it.
pub(crate) fn public_blocks(text: &str) -> Vec<Range<usize>> {
    let mut blocks: Vec<Range<usize>> = Vec::new();
    for (start, label, body_start) in begin_lines(text) {
        if blocks.last().is_some_and(|last| start < last.end) || !is_public_label(label) {
            continue;
        }
        let body_end = body_end(text.as_bytes(), body_start);
        if let Some(end) = end_line(text, body_end, label) {
            blocks.push(start..end);
        }
    }
    blocks
}

/// Every BEGIN line of `text` with a label: where it starts, its label, and where
/// the body after it starts.
fn begin_lines(text: &str) -> impl Iterator<Item = (usize, &str, usize)> {
    memmem::find_iter(text.as_bytes(), BEGIN.as_bytes()).filter_map(|start| {
        let (label, body_start) = label_at(text, start + BEGIN.len())?;
        Some((start, label, body_start))
    })
}

/// The label of a BEGIN line whose label starts at `pos`, and where the body starts.
fn label_at(text: &str, pos: usize) -> Option<(&str, usize)> {
    let rest = text.get(pos..)?;
    let len = rest
        .bytes()
        .take(MAX_LABEL)
        .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b' ')
        .count();
    let label = rest.get(..len)?.trim_end();
    rest.get(len..)?
        .starts_with("-----")
        .then_some((label, pos + len + 5))
}

/// Where the body starting at `start` stops: the first byte that is not base64,
/// whitespace, an escaped line break, string quoting or part of a header line.
fn body_end(bytes: &[u8], start: usize) -> usize {
    let limit = (start + MAX_BLOCK).min(bytes.len());
    let mut pos = start;
    // Inside a word: a header's dash may follow (`Proc-Type`), a line's first dash
    // (`----END`) may not.
    let mut in_word = false;
    while pos < limit {
        let Some(&b) = bytes.get(pos) else { break };
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' | b'=' => {
                pos += 1;
                in_word = true;
                continue;
            }
            b' ' | b'\t' | b'\r' | b'\n' | b'"' | b'\'' | b',' => pos += 1,
            b'\\' if matches!(bytes.get(pos + 1), Some(b'n' | b'r')) => pos += 2,
            // A header line: `Proc-Type: 4,ENCRYPTED`, `DEK-Info: AES-128-CBC,…`.
            b':' => pos += 1,
            b'-' if in_word && !bytes.get(pos..).is_some_and(|r| r.starts_with(b"-----")) => {
                pos += 1;
                continue;
            }
            _ => break,
        }
        in_word = false;
    }
    pos
}

/// Most dashes taken on either side of an END line's `END <label>`.
const MAX_DASHES: usize = 16;

/// The end of the END line of `label` right at `pos`, if it is there: `-----END
/// <label>-----`, or the same line with a dash or more too few or too many on either
/// side (a hand-edited or truncated block, `----END RSA PRIVATE KEY----`). Only right
/// where the body stops: an END line further down is another block's, or none.
fn end_line(text: &str, pos: usize, label: &str) -> Option<usize> {
    let rest = text.get(pos..)?;
    let rest = strip_dashes(rest)?.strip_prefix("END ")?;
    let rest = strip_dashes(rest.strip_prefix(label)?)?;
    Some(text.len() - rest.len())
}

/// `text` after the one to [`MAX_DASHES`] dashes it starts with, if it starts with one.
fn strip_dashes(text: &str) -> Option<&str> {
    let dashes = text
        .bytes()
        .take(MAX_DASHES)
        .take_while(|b| *b == b'-')
        .count();
    (dashes > 0).then(|| text.get(dashes..)).flatten()
}

/// A block without its END line ends with its last base64 character.
fn trim_body_end(bytes: &[u8], mut end: usize) -> usize {
    while end > 0
        && bytes
            .get(end - 1)
            .is_some_and(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')))
    {
        end -= 1;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = "MIIEowIBAAKCAQEAx4Xq1yVjQ9a3Zk2mN8vB4kR7tY1wE3uI6oP0aS5dF";

    fn blocks(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        collect(text, 0, &mut out);
        out.iter().map(|c| &text[c.range.clone()]).collect()
    }

    #[test]
    fn a_block_is_redacted_whole() {
        let block = format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{BODY}\n{BODY}==\n-----END RSA PRIVATE KEY-----"
        );
        let text = format!("before\n{block}\nafter");
        assert_eq!(blocks(&text), [block.as_str()]);
        let json = format!(
            r#"{{"key": "-----BEGIN PRIVATE KEY-----\n{BODY}\n-----END PRIVATE KEY-----\n"}}"#
        );
        assert_eq!(blocks(&json).len(), 1);
        assert!(blocks(&json)[0].ends_with("-----END PRIVATE KEY-----"));
        let encrypted = format!(
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F1\n\n{BODY}\n-----END RSA PRIVATE KEY-----"
        );
        assert_eq!(blocks(&encrypted), [encrypted.as_str()]);
    }

    #[test]
    fn a_malformed_end_right_after_the_body_closes_it() {
        for end in [
            "----END RSA PRIVATE KEY-----",
            "-----END RSA PRIVATE KEY----",
            "------END RSA PRIVATE KEY------",
            "-END RSA PRIVATE KEY-",
        ] {
            let block = format!("-----BEGIN RSA PRIVATE KEY-----\n{BODY}\n{end}");
            let text = format!("{block}\nafter\n");
            assert_eq!(blocks(&text), [block.as_str()], "{end}");
        }
        // Without dashes after the label it is no END line.
        let text = format!("-----BEGIN RSA PRIVATE KEY-----\n{BODY}\n-----END RSA PRIVATE KEY\n");
        assert!(blocks(&text)[0].ends_with(BODY), "{text}");
    }

    #[test]
    fn a_malformed_end_does_not_pair_with_a_later_one() {
        let text = format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{BODY}\n---- END RSA PRIVATE KEY -----\nunrelated line one\ncase two: x = 1\n-----END RSA PRIVATE KEY-----\n"
        );
        let found = blocks(&text);
        assert_eq!(found.len(), 1);
        assert!(found[0].ends_with(BODY), "{found:?}");
        assert!(!found[0].contains("unrelated"));
        // Another label's END does not close the block either.
        let text = format!("-----BEGIN RSA PRIVATE KEY-----\n{BODY}\n-----END EC PRIVATE KEY-----");
        assert!(blocks(&text)[0].ends_with(BODY));
    }

    #[test]
    fn public_blocks_are_whole_blocks_of_public_labels() {
        let cert =
            format!("-----BEGIN CERTIFICATE-----\n{BODY}\n{BODY}\n-----END CERTIFICATE-----");
        let text = format!("x = (\n{cert}\n)\nafter {BODY}");
        let found: Vec<&str> = public_blocks(&text)
            .iter()
            .map(|r| &text[r.clone()])
            .collect();
        assert_eq!(found, [cert.as_str()]);
        let quoted = format!(
            "CERT = (\n    \"-----BEGIN CERTIFICATE-----\\n\"\n    \"{BODY}\\n\"\n    \"-----END CERTIFICATE-----\\n\"\n)"
        );
        assert_eq!(public_blocks(&quoted).len(), 1, "{quoted}");
        for label in ["PUBLIC KEY", "RSA PUBLIC KEY", "X509 CRL", "PGP SIGNATURE"] {
            let block = format!("-----BEGIN {label}-----\n{BODY}\n-----END {label}-----");
            assert_eq!(public_blocks(&block).len(), 1, "{label}");
        }
        // Private or encrypted labels, a missing END, another label's END: nothing.
        for text in [
            format!("-----BEGIN PRIVATE KEY-----\n{BODY}\n-----END PRIVATE KEY-----"),
            format!(
                "-----BEGIN ENCRYPTED PRIVATE KEY-----\n{BODY}\n-----END ENCRYPTED PRIVATE KEY-----"
            ),
            format!(
                "-----BEGIN CERTIFICATE-----\n{BODY}\nlet key = read(\"{BODY}\");\n-----END CERTIFICATE-----"
            ),
            format!("-----BEGIN CERTIFICATE-----\n{BODY}\n-----END PUBLIC KEY-----"),
            format!("-----BEGIN CERTIFICATE-----\n{BODY}\n"),
        ] {
            assert!(public_blocks(&text).is_empty(), "{text}");
        }
    }

    #[test]
    fn examples_and_public_blocks_stay() {
        assert!(
            blocks("-----BEGIN PRIVATE KEY-----\nanything\n-----END PRIVATE KEY-----").is_empty()
        );
        assert!(
            blocks("-----BEGIN OPENSSH PRIVATE KEY----------END OPENSSH PRIVATE KEY-----")
                .is_empty()
        );
        let cert = format!("-----BEGIN CERTIFICATE-----\n{BODY}\n-----END CERTIFICATE-----");
        assert!(blocks(&cert).is_empty());
    }
}
