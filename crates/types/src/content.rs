//! Content parts: what a [`Message`](crate::Message) carries besides its text — images
//! (bytes with their media type, or a URL) and documents (PDF bytes).
//!
//! A message's text stays its `content`; its other parts follow it, in order, in
//! `parts`. A message without parts stores and serialises exactly as one of text only.
//! Bytes are held base64-encoded, as every provider's wire form and the stored JSON
//! need them; [`ContentPart::byte_len`] tells their decoded size without decoding.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::error::TypesError;

/// The media type of a PDF document.
pub const PDF_MEDIA_TYPE: &str = "application/pdf";

/// One part of a message besides its text.
///
/// As JSON: `{"type":"image","media_type":"image/png","data":"<base64>"}`,
/// `{"type":"image_url","url":"https://…"}` or
/// `{"type":"document","media_type":"application/pdf","data":"<base64>","name"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ContentPart {
    /// An image given by its bytes.
    Image {
        /// Its media type (`image/png`, `image/jpeg`, `image/gif`, `image/webp`).
        media_type: String,
        /// Its bytes, base64 (standard alphabet, padded).
        data: String,
    },
    /// An image given by a URL the provider fetches itself.
    ImageUrl {
        /// Where it is (`https://…`, or a `data:` URL).
        url: String,
    },
    /// A document given by its bytes (PDF).
    Document {
        /// Its media type (`application/pdf`).
        media_type: String,
        /// Its bytes, base64 (standard alphabet, padded).
        data: String,
        /// Its file name, when known (some providers show it to the model).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

impl ContentPart {
    /// An image of `media_type` made of `bytes`.
    pub fn image(media_type: impl Into<String>, bytes: &[u8]) -> Self {
        Self::Image {
            media_type: media_type.into(),
            data: STANDARD.encode(bytes),
        }
    }

    /// An image the provider fetches from `url`.
    pub fn image_url(url: impl Into<String>) -> Self {
        Self::ImageUrl { url: url.into() }
    }

    /// A PDF document made of `bytes`, named `name` when given.
    pub fn pdf(bytes: &[u8], name: Option<String>) -> Self {
        Self::Document {
            media_type: PDF_MEDIA_TYPE.to_owned(),
            data: STANDARD.encode(bytes),
            name,
        }
    }

    /// The part's kind, as its JSON `type`: `image`, `image_url` or `document`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Image { .. } => "image",
            Self::ImageUrl { .. } => "image_url",
            Self::Document { .. } => "document",
        }
    }

    /// Whether the part is an image (by bytes or by URL).
    pub fn is_image(&self) -> bool {
        matches!(self, Self::Image { .. } | Self::ImageUrl { .. })
    }

    /// Its media type; `None` for an image by URL.
    pub fn media_type(&self) -> Option<&str> {
        match self {
            Self::Image { media_type, .. } | Self::Document { media_type, .. } => Some(media_type),
            Self::ImageUrl { .. } => None,
        }
    }

    /// Its base64 data; `None` for an image by URL.
    pub fn base64_data(&self) -> Option<&str> {
        match self {
            Self::Image { data, .. } | Self::Document { data, .. } => Some(data),
            Self::ImageUrl { .. } => None,
        }
    }

    /// The size of its bytes once decoded (computed from the base64 length, without
    /// decoding); 0 for an image by URL.
    pub fn byte_len(&self) -> usize {
        self.base64_data().map_or(0, decoded_len)
    }

    /// Its bytes, decoded; an empty vector for an image by URL.
    pub fn bytes(&self) -> Result<Vec<u8>, TypesError> {
        match self.base64_data() {
            Some(data) => STANDARD
                .decode(data)
                .map_err(|error| TypesError::InvalidPartData {
                    kind: self.kind(),
                    message: error.to_string(),
                }),
            None => Ok(Vec::new()),
        }
    }

    /// A short description for people and for placeholders: `image (image/png,
    /// 12.0 KiB)`, `image (https://…)`, `document report.pdf (application/pdf, 2.0 MiB)`.
    /// Never the bytes.
    pub fn describe(&self) -> String {
        match self {
            Self::Image { media_type, .. } => {
                format!(
                    "image ({media_type}, {})",
                    human_size(u64::try_from(self.byte_len()).unwrap_or(u64::MAX))
                )
            }
            Self::ImageUrl { url } => format!("image ({})", shorten(url, 80)),
            Self::Document {
                media_type, name, ..
            } => {
                let size = human_size(u64::try_from(self.byte_len()).unwrap_or(u64::MAX));
                match name {
                    Some(name) => format!("document {} ({media_type}, {size})", shorten(name, 80)),
                    None => format!("document ({media_type}, {size})"),
                }
            }
        }
    }
}

/// The decoded length of padded base64 `data`.
fn decoded_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|byte| *byte == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// `bytes` as people read a size: `512 B`, `12.0 KiB` or `2.0 MiB`.
pub fn human_size(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    // Sizes of files and parts are far below 2^53: the conversion is exact enough to show.
    #[allow(clippy::cast_precision_loss)]
    let value = bytes as f64;
    if value < KIB {
        format!("{bytes} B")
    } else if value < KIB * KIB {
        format!("{:.1} KiB", value / KIB)
    } else {
        format!("{:.1} MiB", value / (KIB * KIB))
    }
}

/// `text` cut to `max` characters, with `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(max).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parts_serialise_in_their_documented_shapes() {
        assert_eq!(
            serde_json::to_value(ContentPart::image("image/png", b"\x89PNG")).unwrap(),
            json!({"type":"image","media_type":"image/png","data":"iVBORw=="})
        );
        assert_eq!(
            serde_json::to_value(ContentPart::image_url("https://example.com/a.png")).unwrap(),
            json!({"type":"image_url","url":"https://example.com/a.png"})
        );
        assert_eq!(
            serde_json::to_value(ContentPart::pdf(b"%PDF-1.7", Some("a.pdf".into()))).unwrap(),
            json!({"type":"document","media_type":"application/pdf","data":"JVBERi0xLjc=","name":"a.pdf"})
        );
    }

    #[test]
    fn unknown_kinds_and_fields_are_refused() {
        for bad in [
            json!({"type":"audio","data":"AA=="}),
            json!({"type":"image","media_type":"image/png"}),
            json!({"type":"image","media_type":"image/png","data":"AA==","extra":1}),
            json!({"type":"image_url"}),
            json!({"media_type":"image/png","data":"AA=="}),
        ] {
            assert!(
                serde_json::from_value::<ContentPart>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn sizes_are_known_without_decoding_and_match_the_bytes() {
        for len in 0..20 {
            let bytes = vec![7u8; len];
            let part = ContentPart::image("image/png", &bytes);
            assert_eq!(part.byte_len(), len);
            assert_eq!(part.bytes().unwrap(), bytes);
        }
        assert_eq!(ContentPart::image_url("https://x").byte_len(), 0);
    }

    #[test]
    fn bad_base64_is_an_error_naming_the_part() {
        let part = ContentPart::Image {
            media_type: "image/png".into(),
            data: "not base64!".into(),
        };
        let error = part.bytes().unwrap_err();
        assert!(error.to_string().contains("image"), "{error}");
    }

    #[test]
    fn descriptions_never_hold_the_bytes() {
        let part = ContentPart::image("image/png", &[0u8; 2048]);
        assert_eq!(part.describe(), "image (image/png, 2.0 KiB)");
        let pdf = ContentPart::pdf(&[1u8; 10], Some("r.pdf".into()));
        assert_eq!(pdf.describe(), "document r.pdf (application/pdf, 10 B)");
        let long = format!("https://example.com/{}", "a".repeat(200));
        assert!(ContentPart::image_url(long).describe().chars().count() < 100);
    }
}
