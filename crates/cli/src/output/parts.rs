//! Content parts (images, documents) as the CLI shows them: described, never dumped.
//! `sessions show` and the `attachments` line of a run use the same JSON shape:
//! `{"kind","media_type","bytes","description"}` — the kind, the media type (`null`
//! for an image by URL), the size of the bytes and [`ContentPart::describe`]; never
//! the base64 data.

use oxydra::scrubbing::scrub;
use oxydra::types::ContentPart;
use serde_json::{Value, json};

/// `part` described as JSON, without its bytes; the description is scrubbed (a URL
/// or a document's name may hold a secret).
pub fn part_json(part: &ContentPart) -> Value {
    json!({
        "kind": part.kind(),
        "media_type": part.media_type(),
        "bytes": part.byte_len(),
        "description": part_line(part),
    })
}

/// `part` described on one line (scrubbed; hidden characters are escaped where it
/// is printed).
pub fn part_line(part: &ContentPart) -> String {
    scrub(&part.describe()).text.into_owned()
}

/// One file attached to a prompt, for the line that says what was attached.
pub struct Attached {
    /// The file's name as the person gave it (escaped before it is printed).
    pub file: String,
    /// What was read from it.
    pub part: ContentPart,
}

impl std::fmt::Debug for Attached {
    /// The file and the part's description: never the bytes, even in a panic message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attached")
            .field("file", &self.file)
            .field("part", &self.part.describe())
            .finish()
    }
}

/// The `attachments` line of `--output jsonl`: the files attached to the prompt, in
/// order, each as [`part_json`] with its `file`.
pub fn attachments_json(attached: &[Attached]) -> Value {
    let parts: Vec<Value> = attached
        .iter()
        .map(|one| {
            let mut value = part_json(&one.part);
            if let Some(object) = value.as_object_mut() {
                object.insert(
                    "file".to_owned(),
                    Value::from(scrub(&one.file).text.into_owned()),
                );
            }
            value
        })
        .collect();
    json!({"type": "attachments", "parts": parts})
}

/// The text lines saying what was attached, one per file.
pub fn attachments_text(attached: &[Attached]) -> String {
    attached
        .iter()
        .map(|one| {
            format!(
                "attached {}: {}\n",
                crate::terminal_text::one_line(&scrub(&one.file).text),
                crate::terminal_text::one_line(&part_line(&one.part))
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_described_without_their_bytes() {
        let part = ContentPart::image("image/png", &[7u8; 3000]);
        let value = part_json(&part);
        assert_eq!(
            value,
            json!({"kind":"image","media_type":"image/png","bytes":3000,
                "description":"image (image/png, 2.9 KiB)"})
        );
        let data = part.base64_data().unwrap();
        assert!(!value.to_string().contains(&data[..40]));
        let url = part_json(&ContentPart::image_url("https://x.test/a.png"));
        assert_eq!(url["media_type"], Value::Null);
        assert_eq!(url["bytes"], 0);
    }

    #[test]
    fn file_names_are_escaped_and_scrubbed_on_the_terminal() {
        let attached = [Attached {
            file: "evil\u{1b}]2;title\u{7}.png".to_owned(),
            part: ContentPart::pdf(b"%PDF-1.4", Some("r.pdf".to_owned())),
        }];
        let text = attachments_text(&attached);
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.starts_with("attached evil"), "{text}");
        assert!(
            text.contains("document r.pdf (application/pdf, 8 B)"),
            "{text}"
        );
        let json = attachments_json(&attached);
        assert_eq!(json["type"], "attachments");
        assert_eq!(json["parts"][0]["kind"], "document");
        assert_eq!(json["parts"][0]["bytes"], 8);
    }
}
