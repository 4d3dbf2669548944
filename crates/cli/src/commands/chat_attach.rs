//! `@path` in a `chat` line: each `@` token naming a file in the workspace attaches it
//! to the message — an image or a PDF as a part, a text file (UTF-8, at most
//! [`MAX_TEXT_BYTES`]) as its contents after the line, each in a block naming the file.
//! The runtime scrubs the message as it scrubs every user message, so a `.env` named
//! with `@` reaches the provider and the store with its secrets redacted. A message
//! that attaches anything is recorded with source `workspace` ([`Attachments::source`]):
//! it carries a file's contents, which the project rather than the person may have
//! written, so the `[provenance]` policy applies to it as to a `file_read`.
//!
//! The path is resolved as the file tools resolve theirs ([`WorkspacePolicy`]): `..`,
//! absolute paths outside the workspace and symlinks that lead out are refused, and the
//! file is opened without following a symlink. A token naming nothing, a directory or
//! a file that is neither media nor text (binary bytes) stays plain text (`@bob`).
//! A token naming a file that cannot be attached (outside the workspace, too large, a
//! kind no provider takes, unreadable) or more than [`MAX_ATTACHMENTS`] files refuse
//! the whole line: nothing is sent or stored, and the person is told why.

use std::fs::File;
use std::io::ErrorKind;
use std::path::Path;

use nix::fcntl::OFlag;
use oxydra::tools::{ToolError, WorkspacePolicy};
use oxydra::types::Source;

use crate::attachment::{self, AttachmentProblem, MAX_ATTACHMENTS};
use crate::output::parts::Attached;

/// Characters that end a sentence rather than a path: `look at @a.png, then…`.
const TRAILING: &[char] = &[',', ';', ':', '!', '?', ')', ']', '"', '\'', '.'];

/// Most bytes of one text file attached with `@` (a larger one is for `file_read`).
pub const MAX_TEXT_BYTES: u64 = 100 * 1024;

/// What the `@path` tokens of a line attach.
#[derive(Debug, Default)]
pub struct Attachments {
    /// Images and PDFs, as parts.
    pub media: Vec<Attached>,
    /// Text files: the name as given and the contents.
    pub texts: Vec<(String, String)>,
}

impl Attachments {
    /// Where the message comes from: the workspace when it attaches any file (its
    /// contents are not the person's words), else the person alone (`None`).
    pub fn source(&self) -> Option<Source> {
        (!self.media.is_empty() || !self.texts.is_empty()).then_some(Source::Workspace)
    }

    /// The message: `line`, then each text file in a block naming it.
    pub fn message(&self, line: &str) -> String {
        let mut message = line.to_owned();
        for (file, text) in &self.texts {
            let end = if text.ends_with('\n') { "" } else { "\n" };
            message.push_str(&format!(
                "\n\n--- @{file} ---\n{text}{end}--- end of @{file} ---"
            ));
        }
        message
    }
}

/// What one `@token` names.
enum Found {
    Media(Attached),
    Text(String, String),
}

/// The files the `@path` tokens of `line` attach, in order (each file once), or why
/// the line cannot be sent.
pub fn attachments(line: &str, workspace: &Path) -> Result<Attachments, String> {
    let tokens: Vec<&str> = line
        .split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        .map(|path| path.trim_end_matches(TRAILING))
        .filter(|path| !path.is_empty())
        .collect();
    let mut attached = Attachments::default();
    if tokens.is_empty() {
        return Ok(attached);
    }
    let policy =
        WorkspacePolicy::new(workspace).map_err(|error| format!("cannot attach files: {error}"))?;
    for token in tokens {
        let Some(found) = attach_one(&policy, token)? else {
            continue;
        };
        let file = match &found {
            Found::Media(media) => &media.file,
            Found::Text(file, _) => file,
        };
        let seen = attached.media.iter().any(|seen| &seen.file == file)
            || attached.texts.iter().any(|(seen, _)| seen == file);
        if seen {
            continue;
        }
        if attached.media.len() + attached.texts.len() == MAX_ATTACHMENTS {
            return Err(format!(
                "more than {MAX_ATTACHMENTS} files named with @: attach at most {MAX_ATTACHMENTS} to one message"
            ));
        }
        match found {
            Found::Media(media) => attached.media.push(media),
            Found::Text(file, text) => attached.texts.push((file, text)),
        }
    }
    Ok(attached)
}

/// The file `@token` attaches; `None` when the token is plain text.
fn attach_one(policy: &WorkspacePolicy, token: &str) -> Result<Option<Found>, String> {
    let refused = |why: String| format!("@{token}: {why} (nothing was sent)");
    let resolved = match policy.resolve(token) {
        Ok(resolved) => resolved,
        Err(ToolError::OutsideWorkspace { .. }) => {
            return Err(refused(
                "outside the workspace: only files inside it can be attached".to_owned(),
            ));
        }
        // A token that is no path at all (a NUL, an absurd length) is text.
        Err(_) => return Ok(None),
    };
    // A directory, a FIFO or a device is not even opened (opening a FIFO waits for a
    // writer, a device can act on its opening): the token is plain text.
    if std::fs::symlink_metadata(&resolved.absolute).is_ok_and(|meta| {
        let kind = meta.file_type();
        !kind.is_file() && !kind.is_symlink()
    }) {
        return Ok(None);
    }
    let file = match open_no_follow(&resolved.absolute) {
        Ok(file) => file,
        Err(error) if matches!(error.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            return Ok(None);
        }
        Err(error) => return Err(refused(format!("cannot read it: {error}"))),
    };
    // Read once: the same bytes are a part, or else text.
    let bytes = match attachment::bytes_of(file) {
        Ok(bytes) => bytes,
        Err(AttachmentProblem::NotAFile(_)) => return Ok(None),
        Err(problem) => return Err(refused(problem.to_string())),
    };
    match attachment::part_from(&bytes, &resolved.absolute) {
        Ok(part) => Ok(Some(Found::Media(Attached {
            file: resolved.relative,
            part,
        }))),
        Err(AttachmentProblem::NotMedia) => Ok(text_of(bytes)
            .map_err(refused)?
            .map(|text| Found::Text(resolved.relative, text))),
        Err(problem) => Err(refused(problem.to_string())),
    }
}

/// `bytes` as text: UTF-8 without NUL bytes, at most [`MAX_TEXT_BYTES`] (a larger
/// text file refuses the line); `None` for binary bytes.
fn text_of(bytes: Vec<u8>) -> Result<Option<String>, String> {
    let Ok(text) = String::from_utf8(bytes) else {
        return Ok(None);
    };
    if text.contains('\0') {
        return Ok(None);
    }
    if u64::try_from(text.len()).unwrap_or(u64::MAX) > MAX_TEXT_BYTES {
        return Err(format!(
            "a text file over {} KiB: ask the agent to read it (file_read) instead",
            MAX_TEXT_BYTES / 1024
        ));
    }
    Ok(Some(text))
}

/// Opens `path` for reading without following a symlink in its last name (one swapped
/// in after the path was resolved), without blocking on a FIFO (see
/// [`attachment::open_nonblocking`]).
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    attachment::open_nonblocking(path, OFlag::O_NOFOLLOW)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("shot.png"), PNG).unwrap();
        std::fs::write(dir.path().join("fake.png"), b"not an image").unwrap();
        std::fs::write(dir.path().join("r.pdf"), b"%PDF-1.7\n").unwrap();
        dir
    }

    fn files(attached: &Attachments) -> Vec<&str> {
        attached.media.iter().map(|one| one.file.as_str()).collect()
    }

    #[test]
    fn images_and_pdfs_named_with_at_are_attached_once_in_order() {
        let dir = workspace();
        let found = attachments(
            "compare @r.pdf and @shot.png, and @shot.png again.",
            dir.path(),
        )
        .unwrap();
        assert_eq!(files(&found), ["r.pdf", "shot.png"]);
        assert_eq!(found.media[0].part.kind(), "document");
        assert_eq!(found.media[1].part.media_type(), Some("image/png"));
        assert_eq!(found.source(), Some(Source::Workspace));
    }

    #[test]
    fn tokens_that_name_no_file_stay_text() {
        let dir = workspace();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("blob.bin"), b"\x00\x01\xfe binary").unwrap();
        for line in [
            "no token here",
            "ask @bob about it",
            "look in @sub",
            "just an @ sign",
            "mail me@example.com",
            "what is @blob.bin?",
        ] {
            let found = attachments(line, dir.path()).unwrap();
            assert!(found.media.is_empty() && found.texts.is_empty(), "{line}");
            assert_eq!(found.source(), None, "the person's words alone: {line}");
        }
    }

    #[test]
    fn a_text_file_is_attached_as_a_block_after_the_line() {
        let dir = workspace();
        std::fs::write(dir.path().join("notes.txt"), "line one\nline two\n").unwrap();
        let found = attachments("is @notes.txt right? and @fake.png?", dir.path()).unwrap();
        assert!(found.media.is_empty());
        assert_eq!(found.texts.len(), 2);
        assert_eq!(found.source(), Some(Source::Workspace));
        assert_eq!(
            found.message("is @notes.txt right?"),
            "is @notes.txt right?\n\n--- @notes.txt ---\nline one\nline two\n--- end of @notes.txt ---\n\n\
             --- @fake.png ---\nnot an image\n--- end of @fake.png ---"
        );
        // Too large a text refuses the line, saying what to do instead.
        std::fs::write(dir.path().join("big.txt"), "x".repeat(200 * 1024)).unwrap();
        let error = attachments("read @big.txt", dir.path()).unwrap_err();
        assert!(
            error.contains("file_read") && error.contains("nothing was sent"),
            "{error}"
        );
    }

    #[test]
    fn a_fifo_named_with_at_stays_text_and_never_blocks() {
        let dir = workspace();
        let fifo = dir.path().join("pipe.png");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        // No writer ever opens it: a blocking open would wait forever.
        let found = attachments("look at @pipe.png", dir.path()).unwrap();
        assert!(found.media.is_empty() && found.texts.is_empty());
    }

    #[test]
    fn paths_out_of_the_workspace_are_refused() {
        let outside = workspace();
        let dir = workspace();
        std::os::unix::fs::symlink(outside.path().join("shot.png"), dir.path().join("link.png"))
            .unwrap();
        let absolute = format!("@{}", outside.path().join("shot.png").display());
        for line in ["see @../shot.png", absolute.as_str(), "see @link.png"] {
            let error = attachments(line, dir.path()).unwrap_err();
            assert!(error.contains("outside the workspace"), "{line}: {error}");
            assert!(error.contains("nothing was sent"), "{error}");
        }
        // A symlink inside the workspace to a file inside it is that file.
        std::os::unix::fs::symlink(dir.path().join("shot.png"), dir.path().join("in.png")).unwrap();
        let found = attachments("@in.png", dir.path()).unwrap();
        assert_eq!(files(&found), ["shot.png"]);
    }

    #[test]
    fn files_that_cannot_be_attached_refuse_the_line() {
        let dir = workspace();
        let mut bmp = b"BM".to_vec();
        bmp.extend([0u8; 40]);
        std::fs::write(dir.path().join("old.bmp"), bmp).unwrap();
        let error = attachments("@old.bmp", dir.path()).unwrap_err();
        assert!(error.contains("@old.bmp: BMP is not supported"), "{error}");
        let many: String = (0..=MAX_ATTACHMENTS)
            .map(|n| {
                std::fs::write(dir.path().join(format!("{n}.png")), PNG).unwrap();
                format!("@{n}.png ")
            })
            .collect();
        let error = attachments(&many, dir.path()).unwrap_err();
        assert!(error.contains("at most 16"), "{error}");
    }
}
