//! `file_read` of an image or a PDF: the file is attached as a content part, its media
//! type sniffed from its bytes (never from its name) and its size capped.

use std::io::{BufRead, Read};

use oxydra_types::{ContentPart, PDF_MEDIA_TYPE, is_image_media_type, sniff_media_type};

use super::io_error;
use crate::error::ToolError;
use crate::tool::ToolOutput;

/// The media type of a file that starts with `head`, when `file_read` attaches such
/// files: PNG, JPEG, GIF, WebP or PDF, recognised by their signature bytes.
pub(super) fn attachable_media_type(head: &[u8]) -> Option<&'static str> {
    sniff_media_type(head).filter(|media| is_image_media_type(media) || *media == PDF_MEDIA_TYPE)
}

/// Attaches the file `rel` (of `media_type`, `len` bytes by its metadata) read through
/// `reader`: its output is a line saying what was attached, and the part. A file over
/// `max_bytes` (or one that grew past it while being read) is a tool error naming the
/// limit and what to do instead.
pub(super) fn attach(
    mut reader: impl BufRead,
    rel: &str,
    media_type: &'static str,
    len: u64,
    max_bytes: usize,
    window_asked: bool,
) -> Result<ToolOutput, ToolError> {
    let cap = u64::try_from(max_bytes).unwrap_or(u64::MAX);
    if len > cap {
        return Err(too_large(rel, media_type, len, max_bytes));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    (&mut reader)
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| io_error("reading", rel, e))?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > cap {
        return Err(too_large(rel, media_type, read, max_bytes));
    }
    // The file was rewritten while it was read: what was read must still be the
    // kind of file it was sniffed as.
    if attachable_media_type(&bytes) != Some(media_type) {
        return Err(ToolError::Failed(format!(
            "`{rel}` changed while it was read; read it again"
        )));
    }
    let part = if media_type == PDF_MEDIA_TYPE {
        ContentPart::pdf(&bytes, Some(file_name(rel).to_owned()))
    } else {
        ContentPart::image(media_type, &bytes)
    };
    let mut text = format!("Attached `{rel}`: {}.", part.describe());
    if window_asked {
        text.push_str(" offset and limit apply to text files only; the whole file is attached.");
    }
    Ok(ToolOutput::text(text).with_parts(vec![part]))
}

/// The error for a media file of `len` bytes over the `max_bytes` cap.
fn too_large(rel: &str, media_type: &str, len: u64, max_bytes: usize) -> ToolError {
    let kind = if media_type == PDF_MEDIA_TYPE {
        "a PDF document"
    } else {
        "an image"
    };
    ToolError::Failed(format!(
        "`{rel}` is {kind} ({media_type}) of {}, over the {} file_read attaches \
         (`[tools.file_read] max_media_bytes`); make a smaller copy (scale the image down \
         or split the PDF, e.g. with shell_exec) and read that instead",
        size(len),
        size(u64::try_from(max_bytes).unwrap_or(u64::MAX)),
    ))
}

/// `bytes` as `12 B`, `3.5 KiB` or `5.0 MiB`.
fn size(bytes: u64) -> String {
    oxydra_types::human_size(bytes)
}

/// The last component of the workspace path `rel`.
fn file_name(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_images_and_pdfs_are_attachable() {
        assert_eq!(
            attachable_media_type(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
            Some("image/png")
        );
        assert_eq!(attachable_media_type(b"%PDF-1.4\n"), Some(PDF_MEDIA_TYPE));
        // SVG is text, BMP is not a type providers take.
        assert_eq!(attachable_media_type(b"<svg xmlns="), None);
        assert_eq!(attachable_media_type(b"BM6\0\0\0\0\0"), None);
        assert_eq!(attachable_media_type(b""), None);
    }

    #[test]
    fn sizes_and_names_read_well() {
        assert_eq!(size(12), "12 B");
        assert_eq!(size(3584), "3.5 KiB");
        assert_eq!(size(5 * 1024 * 1024), "5.0 MiB");
        assert_eq!(file_name("docs/a.pdf"), "a.pdf");
        assert_eq!(file_name("a.pdf"), "a.pdf");
    }
}
