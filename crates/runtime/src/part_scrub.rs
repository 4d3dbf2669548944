//! Scrubbing the parts of a message (images, documents) before they reach the
//! provider or the database.
//!
//! A part's text is its metadata: a document's file name, an image's URL and the media
//! type a tool gave. Each passes the scrubber like any text, so a credential in a file
//! name or a signed URL is never sent or stored. The bytes are checked before this, by
//! [`crate::media_guard`]: a part whose bytes hold text that looks like a secret is
//! withheld, not scrubbed (docs/security.md).

use oxydra_scrubbing::Scrubber;
use oxydra_types::ContentPart;

/// `parts` with their metadata scrubbed by `scrubber`; the bytes are kept as they are.
pub(crate) fn scrub_parts(scrubber: &Scrubber, parts: &[ContentPart]) -> Vec<ContentPart> {
    parts
        .iter()
        .map(|part| scrub_part(scrubber, part))
        .collect()
}

fn scrub_part(scrubber: &Scrubber, part: &ContentPart) -> ContentPart {
    let scrub = |text: &str| scrubber.scrub(text).into_owned();
    match part {
        ContentPart::Image { media_type, data } => ContentPart::Image {
            media_type: scrub(media_type),
            data: data.clone(),
        },
        ContentPart::ImageUrl { url } => ContentPart::ImageUrl { url: scrub(url) },
        ContentPart::Document {
            media_type,
            data,
            name,
        } => ContentPart::Document {
            media_type: scrub(media_type),
            data: data.clone(),
            name: name.as_deref().map(scrub),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKl";

    #[test]
    fn names_and_urls_are_scrubbed_and_bytes_kept() {
        let scrubber = Scrubber::default();
        let image = ContentPart::image("image/png", b"\x89PNG\r\n\x1a\n");
        let parts = [
            image.clone(),
            ContentPart::image_url(format!("https://example.com/a.png?key={SECRET}")),
            ContentPart::pdf(b"%PDF-1.7", Some(format!("{SECRET}.pdf"))),
            ContentPart::pdf(b"%PDF-1.7", None),
        ];
        let scrubbed = scrub_parts(&scrubber, &parts);
        assert_eq!(scrubbed.len(), 4);
        assert_eq!(scrubbed[0], image);
        for part in &scrubbed {
            let json = serde_json::to_string(part).unwrap();
            assert!(!json.contains(SECRET), "{json}");
        }
        assert!(
            matches!(&scrubbed[1], ContentPart::ImageUrl { url } if url.starts_with("https://example.com/a.png"))
        );
        assert_eq!(scrubbed[2].base64_data(), parts[2].base64_data());
        assert_eq!(scrubbed[3], parts[3]);
    }
}
