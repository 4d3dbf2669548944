//! An MCP server's image and embedded binary resources as content parts.
//!
//! An image block, or an embedded resource blob of an image or PDF media type, becomes
//! a [`ContentPart`] when its bytes are what it claims: the media type is sniffed from
//! the bytes, and a claim the bytes do not bear out, an unknown type, bad base64 or a
//! blob over [`DEFAULT_MAX_MEDIA_BYTES`] leaves a text placeholder naming it instead —
//! never the raw bytes.

use oxydra_tools::DEFAULT_MAX_MEDIA_BYTES;
use oxydra_types::{ContentPart, PDF_MEDIA_TYPE, is_image_media_type, sniff_media_type};

/// What one binary block of a result gives the model: a part with the text naming it,
/// or only a placeholder text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Media {
    /// The bytes are an image or a PDF: the part, and the text saying it is attached.
    Attached {
        /// What the model reads in place of the block.
        text: String,
        /// The part.
        part: ContentPart,
    },
    /// Not attached: the text says what it was and why.
    Placeholder(String),
}

/// `media_type` in the form [`sniff_media_type`] gives (lower case, `image/jpg` as
/// `image/jpeg`, parameters dropped).
fn normalise(media_type: &str) -> String {
    let base = media_type
        .split(';')
        .next()
        .unwrap_or(media_type)
        .trim()
        .to_ascii_lowercase();
    if base == "image/jpg" {
        "image/jpeg".to_owned()
    } else {
        base
    }
}

/// Whether `media_type` (normalised) is one a part may carry.
fn attachable(media_type: &str) -> bool {
    is_image_media_type(media_type) || media_type == PDF_MEDIA_TYPE
}

/// An image block: base64 `data` claimed to be `mime_type`.
pub(crate) fn image(data: &str, mime_type: &str) -> Media {
    let claimed = normalise(mime_type);
    let label = format!("image: {}", shorten(mime_type));
    if !is_image_media_type(&claimed) {
        return Media::Placeholder(format!(
            "[{label}; not attached: only PNG, JPEG, GIF and WebP images are]"
        ));
    }
    decode(data, Some(&claimed), None, &label)
}

/// An embedded blob resource at `uri`, claimed to be `mime_type` when given: attached
/// when its bytes are an image or a PDF (and what it claims, if it claims a type).
pub(crate) fn blob(uri: &str, mime_type: Option<&str>, data: &str) -> Media {
    let claimed = mime_type.map(normalise);
    let label = match mime_type {
        Some(mime) => format!("binary resource: {} ({})", shorten(uri), shorten(mime)),
        None => format!("binary resource: {}", shorten(uri)),
    };
    match &claimed {
        Some(claimed) if !attachable(claimed) => Media::Placeholder(format!("[{label}]")),
        _ => {
            let name = uri.rsplit('/').next().filter(|name| !name.is_empty());
            decode(data, claimed.as_deref(), name, &label)
        }
    }
}

/// The part made of base64 `data` if its bytes are an attachable type (the one
/// `claimed`, when given) within the size cap; otherwise a placeholder `[label; …]`.
fn decode(data: &str, claimed: Option<&str>, name: Option<&str>, label: &str) -> Media {
    // Checked before decoding, from the base64 length: a huge blob is never decoded.
    let size = data.len() / 4 * 3;
    if size > DEFAULT_MAX_MEDIA_BYTES.saturating_add(2) {
        return Media::Placeholder(format!(
            "[{label}; not attached: about {} KiB, over the {} KiB limit]",
            size / 1024,
            DEFAULT_MAX_MEDIA_BYTES / 1024
        ));
    }
    let probe = ContentPart::Image {
        media_type: String::new(),
        data: data.to_owned(),
    };
    let Ok(bytes) = probe.bytes() else {
        return Media::Placeholder(format!("[{label}; not attached: not valid base64]"));
    };
    if bytes.len() > DEFAULT_MAX_MEDIA_BYTES {
        return Media::Placeholder(format!(
            "[{label}; not attached: {} KiB, over the {} KiB limit]",
            bytes.len() / 1024,
            DEFAULT_MAX_MEDIA_BYTES / 1024
        ));
    }
    let sniffed = sniff_media_type(&bytes).filter(|media| attachable(media));
    let media_type = match (sniffed, claimed) {
        (Some(sniffed), Some(claimed)) if sniffed == claimed => sniffed,
        (Some(sniffed), None) => sniffed,
        (Some(sniffed), Some(_)) => {
            return Media::Placeholder(format!("[{label}; not attached: its bytes are {sniffed}]"));
        }
        (None, _) => {
            return Media::Placeholder(format!(
                "[{label}; not attached: its bytes are not a PNG, JPEG, GIF or WebP image or a PDF]"
            ));
        }
    };
    let part = if media_type == PDF_MEDIA_TYPE {
        ContentPart::pdf(&bytes, name.map(str::to_owned))
    } else {
        ContentPart::image(media_type, &bytes)
    };
    Media::Attached {
        text: format!("[attached {}]", part.describe()),
        part,
    }
}

/// `text` cut to 100 characters: a server's URI or media type is named, not dumped.
fn shorten(text: &str) -> String {
    const MAX: usize = 100;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or_default()),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;

    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";
    const PDF: &[u8] = b"%PDF-1.7\n%%EOF\n";

    fn b64(bytes: &[u8]) -> String {
        STANDARD.encode(bytes)
    }

    #[test]
    fn an_image_whose_bytes_match_becomes_a_part() {
        let media = image(&b64(PNG), "image/png");
        assert_eq!(
            media,
            Media::Attached {
                text: format!("[attached image (image/png, {} B)]", PNG.len()),
                part: ContentPart::image("image/png", PNG),
            }
        );
        // Case and parameters of the claim do not matter; `image/jpg` is JPEG.
        assert!(matches!(
            image(&b64(PNG), "IMAGE/PNG; q=1"),
            Media::Attached { .. }
        ));
        let jpeg = [0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10];
        assert!(matches!(
            image(&b64(&jpeg), "image/jpg"),
            Media::Attached { .. }
        ));
    }

    #[test]
    fn a_mismatch_or_unknown_type_is_a_placeholder_without_bytes() {
        let cases = [
            (image(&b64(PNG), "image/jpeg"), "its bytes are image/png"),
            (
                image(&b64(b"hello world"), "image/png"),
                "its bytes are not a PNG",
            ),
            (
                image(&b64(b"<svg/>"), "image/svg+xml"),
                "only PNG, JPEG, GIF and WebP",
            ),
            (
                image(&b64(b"BM\0\0"), "image/bmp"),
                "only PNG, JPEG, GIF and WebP",
            ),
            (image("%%% not base64", "image/png"), "not valid base64"),
            (
                image(&b64(PDF), "image/png"),
                "its bytes are application/pdf",
            ),
        ];
        for (media, why) in cases {
            let Media::Placeholder(text) = media else {
                panic!("expected a placeholder for {why}");
            };
            assert!(text.contains(why), "{text}");
            assert!(text.starts_with("[image: "), "{text}");
            assert!(!text.contains("iVBOR") && !text.contains("PNG\r"), "{text}");
        }
    }

    #[test]
    fn an_oversized_image_is_refused_before_decoding() {
        let big = "A".repeat(DEFAULT_MAX_MEDIA_BYTES / 3 * 4 + 64);
        let Media::Placeholder(text) = image(&big, "image/png") else {
            panic!("attached an oversized image");
        };
        assert!(text.contains("over the 5120 KiB limit"), "{text}");
    }

    #[test]
    fn blobs_of_images_and_pdfs_become_parts_and_others_stay_named() {
        let media = blob("file:///reports/q3.pdf", Some("application/pdf"), &b64(PDF));
        assert_eq!(
            media,
            Media::Attached {
                text: format!(
                    "[attached document q3.pdf (application/pdf, {} B)]",
                    PDF.len()
                ),
                part: ContentPart::pdf(PDF, Some("q3.pdf".into())),
            }
        );
        // Without a claimed type, the bytes decide.
        assert!(matches!(
            blob("mem://shot", None, &b64(PNG)),
            Media::Attached { .. }
        ));
        assert_eq!(
            blob("mem://x.zip", Some("application/zip"), &b64(b"PK\x03\x04")),
            Media::Placeholder("[binary resource: mem://x.zip (application/zip)]".into())
        );
        let Media::Placeholder(text) = blob("mem://raw", None, &b64(b"\0\x01\x02")) else {
            panic!("attached unknown bytes");
        };
        assert!(
            text.starts_with("[binary resource: mem://raw; not attached"),
            "{text}"
        );
        let Media::Placeholder(text) = blob("mem://a.pdf", Some("application/pdf"), &b64(PNG))
        else {
            panic!("attached a PNG claimed to be a PDF");
        };
        assert!(text.contains("its bytes are image/png"), "{text}");
    }
}
