//! Media types read from the bytes, never from a name: what a file really is decides
//! whether it may be sent as an image or a document.

use crate::content::PDF_MEDIA_TYPE;

/// The media type of `bytes` when they start as a PNG, JPEG, GIF, WebP image or a PDF
/// document; `None` otherwise (a file named `.png` that is not one included).
pub fn sniff_media_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        Some("image/webp")
    } else if bytes.starts_with(b"%PDF-") {
        Some(PDF_MEDIA_TYPE)
    } else {
        None
    }
}

/// Whether `media_type` is one of the image types [`sniff_media_type`] knows.
pub fn is_image_media_type(media_type: &str) -> bool {
    matches!(
        media_type,
        "image/png" | "image/jpeg" | "image/gif" | "image/webp"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_headers_are_recognised() {
        assert_eq!(
            sniff_media_type(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
            Some("image/png")
        );
        assert_eq!(
            sniff_media_type(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Some("image/jpeg")
        );
        assert_eq!(sniff_media_type(b"GIF89a\x01\0"), Some("image/gif"));
        assert_eq!(
            sniff_media_type(b"RIFF\x24\0\0\0WEBPVP8 "),
            Some("image/webp")
        );
        assert_eq!(sniff_media_type(b"%PDF-1.7\n"), Some("application/pdf"));
    }

    #[test]
    fn impostors_and_fragments_are_not() {
        for bytes in [
            &b""[..],
            b"\x89PNG",
            b"PNG\r\n\x1a\n",
            b"RIFF\x24\0\0\0WAVE",
            b"RIFFWEBP",
            b"<svg xmlns=",
            b"%PDF",
            b"#!/bin/sh\n",
        ] {
            assert_eq!(sniff_media_type(bytes), None, "{bytes:?}");
        }
        assert!(is_image_media_type("image/png"));
        assert!(!is_image_media_type("image/svg+xml"));
    }
}
