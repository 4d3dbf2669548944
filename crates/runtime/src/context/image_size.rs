//! The width and height of an image, read from its header (PNG, JPEG, GIF, WebP),
//! without decoding the image.

/// `(width, height)` in pixels from the first bytes of an image of `media_type`;
/// `None` when the header is not there or not of that type.
pub(crate) fn image_size(media_type: &str, head: &[u8]) -> Option<(u32, u32)> {
    match media_type {
        "image/png" => png(head),
        "image/gif" => gif(head),
        "image/webp" => webp(head),
        "image/jpeg" => jpeg(head),
        _ => None,
    }
}

fn be16(bytes: &[u8], at: usize) -> Option<u32> {
    let pair = bytes.get(at..at.checked_add(2)?)?;
    Some(u32::from(u16::from_be_bytes([
        *pair.first()?,
        *pair.get(1)?,
    ])))
}

fn le16(bytes: &[u8], at: usize) -> Option<u32> {
    let pair = bytes.get(at..at.checked_add(2)?)?;
    Some(u32::from(u16::from_le_bytes([
        *pair.first()?,
        *pair.get(1)?,
    ])))
}

fn le24(bytes: &[u8], at: usize) -> Option<u32> {
    let three = bytes.get(at..at.checked_add(3)?)?;
    Some(u32::from_le_bytes([
        *three.first()?,
        *three.get(1)?,
        *three.get(2)?,
        0,
    ]))
}

/// The IHDR chunk follows the 8-byte signature: length, `IHDR`, width, height.
fn png(head: &[u8]) -> Option<(u32, u32)> {
    if head.get(12..16)? != b"IHDR" {
        return None;
    }
    let word = |at: usize| -> Option<u32> {
        let four = head.get(at..at + 4)?;
        Some(u32::from_be_bytes([
            *four.first()?,
            *four.get(1)?,
            *four.get(2)?,
            *four.get(3)?,
        ]))
    };
    Some((word(16)?, word(20)?))
}

/// The logical screen size follows `GIF89a`: width and height, little-endian.
fn gif(head: &[u8]) -> Option<(u32, u32)> {
    Some((le16(head, 6)?, le16(head, 8)?))
}

/// The first chunk after `RIFF….WEBP` says the size: lossy (`VP8 `), lossless
/// (`VP8L`) or extended (`VP8X`).
fn webp(head: &[u8]) -> Option<(u32, u32)> {
    match head.get(12..16)? {
        b"VP8 " => {
            // Frame tag (3 bytes) and start code (9d 01 2a), then 14-bit sizes.
            if head.get(23..26)? != [0x9d, 0x01, 0x2a] {
                return None;
            }
            Some((le16(head, 26)? & 0x3fff, le16(head, 28)? & 0x3fff))
        }
        b"VP8L" => {
            if *head.get(20)? != 0x2f {
                return None;
            }
            let bits = u32::from_le_bytes([
                *head.get(21)?,
                *head.get(22)?,
                *head.get(23)?,
                *head.get(24)?,
            ]);
            Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
        }
        b"VP8X" => Some((le24(head, 24)? + 1, le24(head, 27)? + 1)),
        _ => None,
    }
}

/// Walks the JPEG segments to the first start-of-frame marker, which holds the size.
fn jpeg(head: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        if *head.get(at)? != 0xFF {
            return None;
        }
        let marker = *head.get(at + 1)?;
        match marker {
            // Fill bytes before a marker.
            0xFF => at += 1,
            // Markers without a length.
            0x01 | 0xD0..=0xD8 => at += 2,
            // End of image, or the scan began before any frame header.
            0xD9 | 0xDA => return None,
            // Start of frame (not DHT, JPG or DAC): length, precision, height, width.
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                return Some((be16(head, at + 7)?, be16(head, at + 5)?));
            }
            _ => {
                at = at
                    .checked_add(2)?
                    .checked_add(usize::try_from(be16(head, at + 2)?).ok()?)?
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_from_each_header() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\x03\x20\0\0\x02\x58\x08\x06\0\0\0";
        assert_eq!(image_size("image/png", png), Some((800, 600)));
        let gif = b"GIF89a\x40\x01\xf0\x00\0\0\0";
        assert_eq!(image_size("image/gif", gif), Some((320, 240)));
        let mut lossy = b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0\0\0\0\x9d\x01\x2a".to_vec();
        lossy.extend_from_slice(&[0x80, 0x02, 0xe0, 0x01]);
        assert_eq!(image_size("image/webp", &lossy), Some((640, 480)));
        // Lossless: 14 bits of width - 1, then 14 of height - 1.
        let bits: u32 = 99 | (49 << 14);
        let mut lossless = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        lossless.extend_from_slice(&bits.to_le_bytes());
        assert_eq!(image_size("image/webp", &lossless), Some((100, 50)));
        let mut extended = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\0\0\0\0".to_vec();
        extended.extend_from_slice(&[0xff, 0x03, 0x00, 0xff, 0x01, 0x00]);
        assert_eq!(image_size("image/webp", &extended), Some((1024, 512)));
        // JPEG: an APP0 segment, fill bytes, then SOF0 (height 480, width 640).
        let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0, 0, 0xFF];
        jpeg.extend_from_slice(&[0xFF, 0xC0, 0x00, 0x11, 0x08, 0x01, 0xe0, 0x02, 0x80]);
        assert_eq!(image_size("image/jpeg", &jpeg), Some((640, 480)));
    }

    #[test]
    fn cut_or_broken_headers_give_no_size() {
        assert_eq!(image_size("image/png", b"\x89PNG\r\n\x1a\n"), None);
        assert_eq!(
            image_size(
                "image/png",
                b"\x89PNG\r\n\x1a\n\0\0\0\rIDAT\0\0\0\0\0\0\0\0"
            ),
            None
        );
        assert_eq!(image_size("image/gif", b"GIF89a\x01"), None);
        assert_eq!(image_size("image/webp", b"RIFF\0\0\0\0WEBPVP8 \0\0"), None);
        assert_eq!(
            image_size("image/jpeg", &[0xFF, 0xD8, 0xFF, 0xE0, 0xFF, 0xFF]),
            None
        );
        assert_eq!(
            image_size("image/jpeg", &[0xFF, 0xD8, 0xFF, 0xDA, 0, 2]),
            None
        );
        assert_eq!(image_size("image/jpeg", &[0xFF, 0xD8, 0x00]), None);
        assert_eq!(image_size("image/bmp", b"BM"), None);
        // A segment length that points past the end stops the walk, never panics.
        assert_eq!(
            image_size("image/jpeg", &[0xFF, 0xD8, 0xFF, 0xE1, 0xFF, 0xFF]),
            None
        );
    }
}
