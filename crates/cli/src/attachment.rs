//! Files a person attaches to a prompt (`oxydra run --image FILE`, `@path` in `chat`):
//! read into content parts, their media type sniffed from their bytes (never from
//! their name), their size and number capped.
//!
//! Only a regular file is read. Its type is checked before it is opened (opening a
//! FIFO for reading waits for a writer, opening a device can act on it), it is opened
//! non-blocking and without taking a controlling terminal, and checked again on the
//! opened descriptor: a FIFO swapped in between fails at once too, never hangs.

use std::fs::{File, FileType, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::OFlag;

use oxydra::types::{ContentPart, PDF_MEDIA_TYPE, is_image_media_type, sniff_media_type};

/// The largest file that may be attached, in bytes (20 MiB: what the OpenAI and
/// Anthropic APIs take for one image is less, their PDF limits about this).
pub const MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;

/// The most files one prompt may carry.
pub const MAX_ATTACHMENTS: usize = 16;

/// Why a file cannot be attached; shown after the file's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachmentProblem {
    /// It cannot be opened or read (missing, unreadable, a symlink where none may be).
    Unreadable(String),
    /// It is not a regular file: what it is (`a directory`, `a FIFO (named pipe)`, …).
    NotAFile(&'static str),
    /// It is larger than [`MAX_ATTACHMENT_BYTES`].
    TooLarge(u64),
    /// Its bytes are a known format no provider takes as a part (BMP, SVG, TIFF).
    Unsupported(&'static str),
    /// Its bytes are no image or PDF at all, whatever its name says.
    NotMedia,
}

impl std::fmt::Display for AttachmentProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const KINDS: &str = "PNG, JPEG, GIF, WebP or PDF";
        match self {
            Self::Unreadable(reason) => write!(f, "cannot read it: {reason}"),
            Self::NotAFile(kind) => write!(
                f,
                "not a regular file but {kind}: attach an image or a PDF file"
            ),
            Self::TooLarge(size) => write!(
                f,
                "it is {size} bytes, over the {MAX_ATTACHMENT_BYTES} bytes (20 MiB) a file may be"
            ),
            Self::Unsupported(kind) => {
                write!(f, "{kind} is not supported: attach {KINDS}")
            }
            Self::NotMedia => write!(
                f,
                "not an image or a PDF by its contents (whatever its name says): attach {KINDS}"
            ),
        }
    }
}

/// Reads the file at `path` into a part: an image (PNG, JPEG, GIF, WebP) or a PDF
/// document (named by the file's name), as its bytes say.
pub fn read_part(path: &Path) -> Result<ContentPart, AttachmentProblem> {
    let meta = std::fs::metadata(path)
        .map_err(|error| AttachmentProblem::Unreadable(error.to_string()))?;
    regular(meta.file_type())?;
    let file = open_nonblocking(path, OFlag::empty())
        .map_err(|error| AttachmentProblem::Unreadable(error.to_string()))?;
    part_of(file, path)
}

/// Opens `path` for reading without blocking (a FIFO swapped in after its type was
/// checked opens at once, and [`part_of`] refuses it) and without making a terminal
/// the process's controlling terminal; `extra` adds flags (`O_NOFOLLOW`).
pub fn open_nonblocking(path: &Path, extra: OFlag) -> std::io::Result<File> {
    let flags = OFlag::O_NONBLOCK | OFlag::O_NOCTTY | extra;
    OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(path)
}

/// `Ok` for a regular file, else what the file is.
fn regular(kind: FileType) -> Result<(), AttachmentProblem> {
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file that can be read"
    };
    Err(AttachmentProblem::NotAFile(what))
}

/// Reads the opened `file` (at `path`, for its name) into a part, as [`read_part`]:
/// refused unless the descriptor is a regular file (checked with `fstat`).
pub fn part_of(file: File, path: &Path) -> Result<ContentPart, AttachmentProblem> {
    part_from(&bytes_of(file)?, path)
}

/// The bytes of the opened `file`: refused unless the descriptor is a regular file
/// (checked with `fstat`) of at most [`MAX_ATTACHMENT_BYTES`].
pub fn bytes_of(file: File) -> Result<Vec<u8>, AttachmentProblem> {
    let meta = file
        .metadata()
        .map_err(|error| AttachmentProblem::Unreadable(error.to_string()))?;
    regular(meta.file_type())?;
    if meta.len() > MAX_ATTACHMENT_BYTES {
        return Err(AttachmentProblem::TooLarge(meta.len()));
    }
    // Read one byte past the cap: a file that grew since its metadata is still caught.
    let mut bytes = Vec::new();
    file.take(MAX_ATTACHMENT_BYTES.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|error| AttachmentProblem::Unreadable(error.to_string()))?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > MAX_ATTACHMENT_BYTES {
        return Err(AttachmentProblem::TooLarge(read));
    }
    Ok(bytes)
}

/// The part `bytes` (of the file at `path`, for its name) make: an image or a PDF by
/// their own bytes, whatever the name says.
pub fn part_from(bytes: &[u8], path: &Path) -> Result<ContentPart, AttachmentProblem> {
    match sniff_media_type(bytes) {
        Some(PDF_MEDIA_TYPE) => {
            let name = path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned());
            Ok(ContentPart::pdf(bytes, name))
        }
        Some(media) if is_image_media_type(media) => Ok(ContentPart::image(media, bytes)),
        _ => Err(unsupported_kind(bytes)
            .map_or(AttachmentProblem::NotMedia, AttachmentProblem::Unsupported)),
    }
}

/// The name of a known image format no provider takes, when `bytes` start like one.
fn unsupported_kind(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"BM") && bytes.len() >= 14 {
        return Some("BMP");
    }
    if bytes.starts_with(b"II*\0") || bytes.starts_with(b"MM\0*") {
        return Some("TIFF");
    }
    let head = bytes.get(..bytes.len().min(1024)).unwrap_or_default();
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    let start = head.trim_start_matches('\u{feff}').trim_start();
    if (start.starts_with("<svg") || start.starts_with("<?xml")) && head.contains("<svg") {
        return Some("SVG");
    }
    None
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    fn file(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(bytes).unwrap();
        file
    }

    #[test]
    fn the_bytes_decide_the_kind_not_the_name() {
        let png = file(PNG);
        assert_eq!(
            read_part(png.path()).unwrap(),
            ContentPart::image("image/png", PNG)
        );
        let pdf = file(b"%PDF-1.4\n%%EOF");
        let part = read_part(pdf.path()).unwrap();
        assert_eq!(part.kind(), "document");
        assert_eq!(part.media_type(), Some(PDF_MEDIA_TYPE));
        let text = file(b"just text, named .png");
        assert_eq!(read_part(text.path()), Err(AttachmentProblem::NotMedia));
        assert_eq!(
            read_part(file(b"").path()),
            Err(AttachmentProblem::NotMedia)
        );
    }

    #[test]
    fn known_formats_no_provider_takes_are_named() {
        let mut bmp = b"BM".to_vec();
        bmp.extend([0u8; 60]);
        assert_eq!(
            read_part(file(&bmp).path()),
            Err(AttachmentProblem::Unsupported("BMP"))
        );
        let svg = b"<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>";
        assert_eq!(
            read_part(file(svg).path()),
            Err(AttachmentProblem::Unsupported("SVG"))
        );
        assert_eq!(
            read_part(file(b"  <SVG width='1'/>").path()),
            Err(AttachmentProblem::Unsupported("SVG"))
        );
        assert_eq!(
            read_part(file(b"II*\0rest").path()),
            Err(AttachmentProblem::Unsupported("TIFF"))
        );
        // Text that merely mentions svg is just not media.
        assert_eq!(
            read_part(file(b"notes about <svg> tags").path()),
            Err(AttachmentProblem::NotMedia)
        );
    }

    #[test]
    fn the_size_cap_holds_at_its_boundary() {
        let mut at_cap = PNG.to_vec();
        at_cap.resize(usize::try_from(MAX_ATTACHMENT_BYTES).unwrap(), 0);
        let part = read_part(file(&at_cap).path()).unwrap();
        assert_eq!(part.byte_len(), at_cap.len());
        at_cap.push(0);
        assert_eq!(
            read_part(file(&at_cap).path()),
            Err(AttachmentProblem::TooLarge(MAX_ATTACHMENT_BYTES + 1))
        );
    }

    #[test]
    fn a_fifo_is_refused_at_once_before_and_after_it_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.png");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let problem = read_part(&fifo).unwrap_err();
        assert_eq!(problem, AttachmentProblem::NotAFile("a FIFO (named pipe)"));
        assert!(problem.to_string().contains("FIFO"), "{problem}");
        // Opened (as a swap after the check would be): no writer, no wait, refused.
        let opened = open_nonblocking(&fifo, OFlag::empty()).unwrap();
        assert_eq!(
            part_of(opened, &fifo),
            Err(AttachmentProblem::NotAFile("a FIFO (named pipe)"))
        );
    }

    #[test]
    fn missing_files_and_directories_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_part(&dir.path().join("nope.png")),
            Err(AttachmentProblem::Unreadable(_))
        ));
        assert_eq!(
            read_part(dir.path()),
            Err(AttachmentProblem::NotAFile("a directory"))
        );
        assert_eq!(
            read_part(Path::new("/dev/null")),
            Err(AttachmentProblem::NotAFile("a character device"))
        );
        let message = AttachmentProblem::TooLarge(30).to_string();
        assert!(message.contains("20 MiB"), "{message}");
    }
}
