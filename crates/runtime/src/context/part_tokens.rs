//! The tokens a message's parts (images, documents) take in a prompt: a stated
//! estimate per kind, never their base64 text counted as text.
//!
//! - **Image by bytes:** its width and height read from the header (PNG, JPEG, GIF,
//!   WebP), then Anthropic's rule `width × height / 750`, at most
//!   [`MAX_IMAGE_TOKENS`] (providers scale large images down to about 1.15 megapixels,
//!   which is where that cap lies). An image whose size cannot be read counts
//!   [`MAX_IMAGE_TOKENS`].
//! - **Image by URL:** [`MAX_IMAGE_TOKENS`] (its size is not known before the provider
//!   fetches it).
//! - **PDF document:** [`PDF_PAGE_TOKENS`] for each page (Anthropic counts 1,500 to
//!   3,000 tokens of text per page, plus the page as an image). Pages are counted by
//!   their `/Type /Page` objects; a PDF whose pages are compressed out of sight counts
//!   one page per [`PDF_BYTES_PER_PAGE`] (at least one).
//!
//! The same number is the part's upper bound, estimate and exact count, so the three
//! measures of a message keep their order. Only an image's header (its first
//! [`IMAGE_HEAD_BYTES`]) is decoded; a document is decoded once per measure.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use oxydra_types::{ContentPart, Message};

use super::image_size::image_size;

/// The most tokens one image counts for (and what one of unknown size counts).
pub const MAX_IMAGE_TOKENS: u32 = 1_600;
/// Pixels per token of an image (Anthropic: `width × height / 750`).
pub const PIXELS_PER_TOKEN: u64 = 750;
/// Tokens counted for each page of a PDF.
pub const PDF_PAGE_TOKENS: u32 = 3_000;
/// Bytes counted as one page of a PDF whose page objects cannot be found.
pub const PDF_BYTES_PER_PAGE: usize = 100 * 1024;
/// How much of an image is decoded to read its size: a JPEG's frame header may follow
/// tens of kilobytes of metadata.
pub const IMAGE_HEAD_BYTES: usize = 64 * 1024;

/// The tokens all parts of `message` take.
pub(crate) fn parts_tokens(message: &Message) -> u32 {
    message
        .parts
        .iter()
        .fold(0u32, |total, part| total.saturating_add(part_tokens(part)))
}

/// The tokens `part` takes in a prompt (see the module documentation).
pub fn part_tokens(part: &ContentPart) -> u32 {
    match part {
        ContentPart::Image { media_type, data } => {
            let head = decode_head(data, IMAGE_HEAD_BYTES);
            image_size(media_type, &head).map_or(MAX_IMAGE_TOKENS, |(width, height)| {
                image_tokens(width, height)
            })
        }
        ContentPart::ImageUrl { .. } => MAX_IMAGE_TOKENS,
        ContentPart::Document { .. } => {
            let bytes = part.bytes().unwrap_or_default();
            let pages = pdf_pages(&bytes);
            let pages = if pages == 0 {
                bytes.len().div_ceil(PDF_BYTES_PER_PAGE).max(1)
            } else {
                pages
            };
            u32::try_from(pages)
                .unwrap_or(u32::MAX)
                .saturating_mul(PDF_PAGE_TOKENS)
        }
    }
}

/// `width × height / 750` (rounded up), at most [`MAX_IMAGE_TOKENS`], at least 1.
fn image_tokens(width: u32, height: u32) -> u32 {
    let tokens = (u64::from(width) * u64::from(height)).div_ceil(PIXELS_PER_TOKEN);
    u32::try_from(tokens)
        .unwrap_or(u32::MAX)
        .clamp(1, MAX_IMAGE_TOKENS)
}

/// The first (about) `max` bytes of base64 `data`, decoded; empty when they are not
/// valid base64.
fn decode_head(data: &str, max: usize) -> Vec<u8> {
    // Whole groups of four characters decode on their own.
    let chars = (max / 3 * 4).min(data.len() / 4 * 4);
    let head = data.get(..chars).unwrap_or_default();
    STANDARD.decode(head).unwrap_or_default()
}

/// The page objects of a PDF: each `/Type /Page` (or `/Type/Page`) not followed by
/// `s` (which would make it the page tree, `/Pages`).
fn pdf_pages(bytes: &[u8]) -> usize {
    let mut pages = 0;
    for pattern in [&b"/Type /Page"[..], b"/Type/Page"] {
        let mut rest = bytes;
        while let Some(at) = find(rest, pattern) {
            let after = at + pattern.len();
            if rest.get(after) != Some(&b's') {
                pages += 1;
            }
            rest = rest.get(after..).unwrap_or_default();
        }
    }
    pages
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let first = *needle.first()?;
    let mut from = 0;
    while let Some(offset) = haystack.get(from..)?.iter().position(|byte| *byte == first) {
        let at = from + offset;
        if haystack.get(at..at + needle.len()) == Some(needle) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        bytes.extend_from_slice(&width.to_be_bytes());
        bytes.extend_from_slice(&height.to_be_bytes());
        bytes.extend_from_slice(&[8, 6, 0, 0, 0]);
        bytes
    }

    #[test]
    fn images_count_by_their_pixels_up_to_the_cap() {
        let part = |w, h| ContentPart::image("image/png", &png(w, h));
        // 200 × 150 = 30,000 pixels: 40 tokens.
        assert_eq!(part_tokens(&part(200, 150)), 40);
        assert_eq!(part_tokens(&part(1, 1)), 1);
        // 1000 × 1000: 1,334 tokens; 2000 × 2000 is over the cap.
        assert_eq!(part_tokens(&part(1000, 1000)), 1_334);
        assert_eq!(part_tokens(&part(2000, 2000)), MAX_IMAGE_TOKENS);
        assert_eq!(part_tokens(&part(u32::MAX, u32::MAX)), MAX_IMAGE_TOKENS);
        // Unknown size, a URL, or bytes that are not the type: the cap.
        let broken = ContentPart::image("image/png", b"not a png");
        assert_eq!(part_tokens(&broken), MAX_IMAGE_TOKENS);
        assert_eq!(
            part_tokens(&ContentPart::image_url("https://x/a.png")),
            MAX_IMAGE_TOKENS
        );
        let bad_base64 = ContentPart::Image {
            media_type: "image/png".into(),
            data: "!!!!".into(),
        };
        assert_eq!(part_tokens(&bad_base64), MAX_IMAGE_TOKENS);
    }

    #[test]
    fn a_big_image_is_counted_from_its_header_not_its_base64() {
        let mut bytes = png(100, 75);
        bytes.resize(3 * 1024 * 1024, 0xAB);
        let part = ContentPart::image("image/png", &bytes);
        // 4 MiB of base64 would be over a million text tokens.
        assert_eq!(part_tokens(&part), 10);
    }

    #[test]
    fn pdfs_count_per_page() {
        let three = b"%PDF-1.4\n1 0 obj << /Type /Pages /Count 3 >>\n\
            2 0 obj << /Type /Page >>\n3 0 obj <</Type/Page/Parent 1 0 R>>\n4 0 obj << /Type /Page >>\n%%EOF";
        assert_eq!(
            part_tokens(&ContentPart::pdf(three, None)),
            3 * PDF_PAGE_TOKENS
        );
        // No page objects in sight: by size, at least one page.
        assert_eq!(
            part_tokens(&ContentPart::pdf(b"%PDF-1.7\n", None)),
            PDF_PAGE_TOKENS
        );
        let compressed = vec![b'x'; PDF_BYTES_PER_PAGE * 2 + 1];
        assert_eq!(
            part_tokens(&ContentPart::pdf(&compressed, None)),
            3 * PDF_PAGE_TOKENS
        );
    }

    #[test]
    fn a_thousand_parts_add_up() {
        let parts: Vec<ContentPart> = (0..1_000)
            .map(|i| ContentPart::image("image/png", &png(30 + i % 10, 25)))
            .collect();
        let message = Message::user("look").with_parts(parts.clone());
        let total = parts_tokens(&message);
        let expected: u32 = parts.iter().map(part_tokens).sum();
        assert_eq!(total, expected);
        // 30..39 × 25 pixels: 1 or 2 tokens each.
        assert!((1_000..=2_000).contains(&total), "{total}");
    }
}
