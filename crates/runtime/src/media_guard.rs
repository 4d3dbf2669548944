//! No unscrubbed channel through attachments: a tool result's parts (an image or a
//! PDF `file_read` attached, an MCP server's media) carry bytes the text scrubber
//! never sees, so they are checked before they reach the provider or the database.
//!
//! - **Text inside the bytes.** The printable runs of a part's bytes (what `strings`
//!   prints) and of its PDF streams, inflated, are scrubbed as text is, with the
//!   runtime's scrubber (its patterns, labelled values and secrets known by value;
//!   not the entropy layer, which random-looking bytes of any real image would set
//!   off). A part in which anything is found is withheld. This stops the
//!   wrap-and-read attack: `.env` given a `%PDF-1.4` (or PNG) header and read back as
//!   an attachment.
//! - **Media the model made.** A part whose name is a path that a side-effecting or
//!   privileged call of this session named (`file_write`, `file_edit`, an MCP tool
//!   taking a `path`) is withheld: what the model wrote is read back as text, never
//!   as an attachment whose bytes the person cannot see.
//!
//! A withheld part is replaced by a line in the result's text saying why, so the
//! model can go on (read the file as text, or ask the person).

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use oxydra_scrubbing::Scrubber;
use oxydra_tools::ToolRegistry;
use oxydra_types::{ContentPart, Message, MessageRole, SafetyTier};

/// The shortest printable run taken as text (what `strings -n 8` takes).
const MIN_RUN: usize = 8;

/// The most bytes one PDF stream may inflate to before the rest is ignored (the
/// part is withheld: what it holds cannot be read).
const MAX_INFLATED: usize = 16 * 1024 * 1024;

/// Why a part was withheld.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Withheld {
    /// Its bytes hold text the scrubber redacts (the kinds found).
    SecretInBytes(Vec<String>),
    /// Its bytes could not be read through (a stream too large to inflate).
    Unreadable,
    /// The model wrote or changed the file in this session.
    ModelMade(String),
}

impl Withheld {
    /// The line the model reads in the result instead of the part.
    pub(crate) fn note(&self, part: &ContentPart) -> String {
        let what = match part {
            ContentPart::Document {
                name: Some(name), ..
            } => format!("the attachment `{name}`"),
            _ => "an attachment".to_owned(),
        };
        match self {
            Self::SecretInBytes(kinds) => format!(
                "[{what} was withheld: its bytes hold text that looks like a secret ({}); read it as text instead]",
                kinds.join(", ")
            ),
            Self::Unreadable => {
                format!("[{what} was withheld: its content could not be checked for secrets]")
            }
            Self::ModelMade(path) => format!(
                "[{what} was withheld: `{path}` was written in this session, so it is not attached as media; read it as text instead]"
            ),
        }
    }
}

/// The paths that side-effecting or privileged calls in `history` named in a `path`
/// argument, normalised (see [`normal`]).
pub(crate) fn model_written<'m>(
    history: impl Iterator<Item = &'m Message>,
    registry: &ToolRegistry,
) -> BTreeSet<PathBuf> {
    let mut written = BTreeSet::new();
    for message in history.filter(|message| message.role == MessageRole::Assistant) {
        for call in &message.tool_calls {
            let changes = registry
                .tier(&call.name)
                .is_none_or(|tier| tier != SafetyTier::ReadOnly);
            if !changes {
                continue;
            }
            let arguments: serde_json::Value =
                serde_json::from_str(&call.arguments).unwrap_or_default();
            if let Some(path) = arguments.get("path").and_then(serde_json::Value::as_str) {
                written.insert(normal(path));
            }
        }
    }
    written
}

/// `path` with `.` dropped and `..` applied, lexically: `./a/../b.pdf` is `b.pdf`.
fn normal(path: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Whether `part` may go to the model, and why not.
pub(crate) fn check(
    part: &ContentPart,
    scrubber: &Scrubber,
    written: &BTreeSet<PathBuf>,
) -> Result<(), Withheld> {
    if let ContentPart::Document {
        name: Some(name), ..
    } = part
        && written.contains(&normal(name))
    {
        return Err(Withheld::ModelMade(name.clone()));
    }
    let Some(bytes) = bytes_of(part) else {
        return Ok(());
    };
    let kinds = secret_kinds(&bytes, scrubber)?;
    if kinds.is_empty() {
        Ok(())
    } else {
        Err(Withheld::SecretInBytes(kinds))
    }
}

/// The kinds of secret the scrubber finds in the text `bytes` hold (their printable
/// runs, and a PDF's inflated streams); none when they hold none. A PDF stream too
/// large to inflate is [`Withheld::Unreadable`]. Checkpoint contents are checked the
/// same way before they are stored ([`crate::checkpoint_secrets`]).
pub(crate) fn secret_kinds(bytes: &[u8], scrubber: &Scrubber) -> Result<Vec<String>, Withheld> {
    let mut text = printable_runs(bytes);
    if bytes.starts_with(b"%PDF") {
        for stream in pdf_streams(bytes) {
            match miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(stream, MAX_INFLATED) {
                Ok(inflated) => text.push_str(&printable_runs(&inflated)),
                Err(error) if error.status == miniz_oxide::inflate::TINFLStatus::HasMoreOutput => {
                    return Err(Withheld::Unreadable);
                }
                // Not deflated (an image stream, plain text: its runs are counted
                // already).
                Err(_) => {}
            }
        }
    }
    let scrubbed = scrubber.clone().with_entropy_detection(false).scrub(&text);
    let mut kinds: Vec<String> = scrubbed
        .redactions
        .iter()
        .map(|redaction| redaction.kind.as_str().to_owned())
        .collect();
    kinds.sort();
    kinds.dedup();
    Ok(kinds)
}

/// The bytes of a part given by its bytes (a `data:` URL's too).
fn bytes_of(part: &ContentPart) -> Option<Vec<u8>> {
    let encoded = match part {
        ContentPart::Image { data, .. } | ContentPart::Document { data, .. } => data.as_str(),
        ContentPart::ImageUrl { url } => url.strip_prefix("data:")?.split_once(";base64,")?.1,
    };
    // Bytes that are not base64 are sent as the provider gets them: checked as text.
    Some(
        STANDARD
            .decode(encoded)
            .unwrap_or_else(|_| encoded.as_bytes().to_vec()),
    )
}

/// The runs of at least [`MIN_RUN`] printable ASCII bytes (tabs and line breaks
/// included), one per line.
fn printable_runs(bytes: &[u8]) -> String {
    let mut out = String::new();
    for run in bytes
        .split(|byte| !(byte.is_ascii_graphic() || matches!(byte, b' ' | b'\t' | b'\n' | b'\r')))
    {
        if run.len() >= MIN_RUN {
            out.extend(run.iter().map(|byte| char::from(*byte)));
            out.push('\n');
        }
    }
    out
}

/// The data of each `stream … endstream` of a PDF.
fn pdf_streams(bytes: &[u8]) -> Vec<&[u8]> {
    let mut streams = Vec::new();
    let mut rest = bytes;
    while let Some(start) = memchr::memmem::find(rest, b"stream") {
        let after = rest.get(start + b"stream".len()..).unwrap_or_default();
        // `endstream` itself contains `stream`: a keyword preceded by `end` is skipped.
        let is_end = start >= 3 && rest.get(start - 3..start) == Some(b"end");
        let data_start = if after.starts_with(b"\r\n") {
            2
        } else {
            usize::from(after.starts_with(b"\n") || after.starts_with(b"\r"))
        };
        let Some(body) = after.get(data_start..) else {
            break;
        };
        if is_end {
            rest = after;
            continue;
        }
        let end = memchr::memmem::find(body, b"endstream").unwrap_or(body.len());
        streams.push(body.get(..end).unwrap_or_default());
        rest = body.get(end..).unwrap_or_default();
    }
    streams
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;
    use oxydra_tools::{Tool, ToolContext, ToolError, ToolOutput};
    use oxydra_types::{CallId, ToolCall, ToolSchema};

    use super::*;

    struct Named(&'static str, SafetyTier);

    #[async_trait]
    impl Tool for Named {
        fn schema(&self) -> ToolSchema {
            ToolSchema::new(self.0, "test", serde_json::json!({"type": "object"}))
        }
        fn safety_tier(&self) -> SafetyTier {
            self.1
        }
        async fn execute(
            &self,
            _args: serde_json::Value,
            _ctx: &ToolContext,
        ) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text(""))
        }
    }

    const ENV: &str = "OPENAI_API_KEY=sk-proj-Zq8xKf3LmN9pR2tVw5yB7cD1eG4hJ6kSa1b2c3d4\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8xKf3LmN\n";

    fn pdf(body: &[u8]) -> ContentPart {
        ContentPart::pdf(body, Some("notes.pdf".into()))
    }

    #[test]
    fn a_text_file_wearing_a_pdf_or_png_header_is_withheld() {
        let scrubber = Scrubber::new();
        let none = BTreeSet::new();
        let wrapped = format!("%PDF-1.4\n{ENV}");
        assert!(matches!(
            check(&pdf(wrapped.as_bytes()), &scrubber, &none),
            Err(Withheld::SecretInBytes(_))
        ));
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend_from_slice(ENV.as_bytes());
        assert!(check(&ContentPart::image("image/png", &png), &scrubber, &none).is_err());
        let url = format!("data:image/png;base64,{}", STANDARD.encode(&png));
        assert!(check(&ContentPart::image_url(url), &scrubber, &none).is_err());
    }

    #[test]
    fn a_secret_in_a_deflated_pdf_stream_is_found_and_a_clean_pdf_passes() {
        let scrubber = Scrubber::new();
        let none = BTreeSet::new();
        let deflated = miniz_oxide::deflate::compress_to_vec_zlib(
            format!("BT /F1 12 Tf ({ENV}) Tj ET").as_bytes(),
            6,
        );
        let mut secret = b"%PDF-1.7\n1 0 obj << /Filter /FlateDecode >>\nstream\n".to_vec();
        secret.extend_from_slice(&deflated);
        secret.extend_from_slice(b"\nendstream\nendobj\n%%EOF\n");
        assert!(check(&pdf(&secret), &scrubber, &none).is_err());

        let clean_text = miniz_oxide::deflate::compress_to_vec_zlib(
            b"BT /F1 12 Tf (Quarterly report: revenue grew 4 percent) Tj ET",
            6,
        );
        let mut clean = b"%PDF-1.7\n1 0 obj << /Filter /FlateDecode >>\nstream\r\n".to_vec();
        clean.extend_from_slice(&clean_text);
        clean.extend_from_slice(
            b"\nendstream\nendobj\ntrailer << /ID [<8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d>] >>\n%%EOF\n",
        );
        assert_eq!(check(&pdf(&clean), &scrubber, &none), Ok(()));
    }

    #[test]
    fn a_known_secret_in_the_bytes_is_found_even_without_a_label() {
        let scrubber = Scrubber::new()
            .with_known_secrets([("DEPLOY", "dpl-7Hq2Lm9Xv4Rt8Zp1Wk6N")])
            .unwrap();
        let bytes = b"GIF89a\x01\x00 d p l - 7 H q 2 L m 9 X v 4 R t 8 Z p 1 W k 6 N \x00";
        assert_eq!(
            check(
                &ContentPart::image("image/gif", bytes),
                &scrubber,
                &BTreeSet::new()
            ),
            Err(Withheld::SecretInBytes(vec!["DEPLOY".to_owned()]))
        );
    }

    #[test]
    fn a_file_a_changing_call_named_is_withheld_however_its_path_is_spelt() {
        let mut registry = ToolRegistry::new();
        registry
            .register(Named("change", SafetyTier::SideEffecting))
            .unwrap();
        registry
            .register(Named("read", SafetyTier::ReadOnly))
            .unwrap();
        let history = [Message::assistant_with_tool_calls(
            None,
            vec![
                ToolCall::new(CallId::from("a"), "change", r#"{"path":"docs/./out.pdf"}"#),
                ToolCall::new(CallId::from("b"), "read", r#"{"path":"in.pdf"}"#),
            ],
        )];
        let written = model_written(history.iter(), &registry);
        let scrubber = Scrubber::new();
        let clean = b"%PDF-1.7\n%%EOF\n";
        let made = ContentPart::pdf(clean, Some("docs/sub/../out.pdf".into()));
        assert!(matches!(
            check(&made, &scrubber, &written),
            Err(Withheld::ModelMade(_))
        ));
        let read = ContentPart::pdf(clean, Some("./in.pdf".into()));
        assert_eq!(check(&read, &scrubber, &written), Ok(()));
    }
}
