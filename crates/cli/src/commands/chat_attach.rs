//! `@path` in a `chat` line: each `@` token naming an image or a PDF in the workspace
//! attaches that file to the message.
//!
//! The path is resolved as the file tools resolve theirs ([`WorkspacePolicy`]): `..`,
//! absolute paths outside the workspace and symlinks that lead out are refused, and the
//! file is opened without following a symlink. A token naming nothing, a directory or
//! a file that is no image or PDF by its bytes stays plain text (`@bob`, `@notes.txt`).
//! A token naming a file that cannot be attached (outside the workspace, too large, a
//! kind no provider takes, unreadable) or more than [`MAX_ATTACHMENTS`] files refuse
//! the whole line: nothing is sent or stored, and the person is told why.

use std::fs::File;
use std::io::ErrorKind;
use std::path::Path;

use nix::fcntl::OFlag;
use oxydra::tools::{ToolError, WorkspacePolicy};

use crate::attachment::{self, AttachmentProblem, MAX_ATTACHMENTS};
use crate::output::parts::Attached;

/// Characters that end a sentence rather than a path: `look at @a.png, then…`.
const TRAILING: &[char] = &[',', ';', ':', '!', '?', ')', ']', '"', '\'', '.'];

/// The files the `@path` tokens of `line` attach, in order (each file once), or why
/// the line cannot be sent.
pub fn attachments(line: &str, workspace: &Path) -> Result<Vec<Attached>, String> {
    let tokens: Vec<&str> = line
        .split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        .map(|path| path.trim_end_matches(TRAILING))
        .filter(|path| !path.is_empty())
        .collect();
    if tokens.is_empty() {
        return Ok(Vec::new());
    }
    let policy =
        WorkspacePolicy::new(workspace).map_err(|error| format!("cannot attach files: {error}"))?;
    let mut attached: Vec<Attached> = Vec::new();
    for token in tokens {
        let Some(found) = attach_one(&policy, token)? else {
            continue;
        };
        if attached.iter().any(|seen| seen.file == found.file) {
            continue;
        }
        if attached.len() == MAX_ATTACHMENTS {
            return Err(format!(
                "more than {MAX_ATTACHMENTS} files named with @: attach at most {MAX_ATTACHMENTS} to one message"
            ));
        }
        attached.push(found);
    }
    Ok(attached)
}

/// The file `@token` attaches; `None` when the token is plain text.
fn attach_one(policy: &WorkspacePolicy, token: &str) -> Result<Option<Attached>, String> {
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
    match attachment::part_of(file, &resolved.absolute) {
        Ok(part) => Ok(Some(Attached {
            file: resolved.relative,
            part,
        })),
        Err(AttachmentProblem::NotMedia | AttachmentProblem::NotAFile(_)) => Ok(None),
        Err(problem) => Err(refused(problem.to_string())),
    }
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

    fn files(attached: &[Attached]) -> Vec<&str> {
        attached.iter().map(|one| one.file.as_str()).collect()
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
        assert_eq!(found[0].part.kind(), "document");
        assert_eq!(found[1].part.media_type(), Some("image/png"));
    }

    #[test]
    fn tokens_that_are_not_media_stay_text() {
        let dir = workspace();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        for line in [
            "no token here",
            "ask @bob about it",
            "is @fake.png an image?",
            "look in @sub",
            "just an @ sign",
            "mail me@example.com",
        ] {
            assert!(attachments(line, dir.path()).unwrap().is_empty(), "{line}");
        }
    }

    #[test]
    fn a_fifo_named_with_at_stays_text_and_never_blocks() {
        let dir = workspace();
        let fifo = dir.path().join("pipe.png");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        // No writer ever opens it: a blocking open would wait forever.
        assert!(
            attachments("look at @pipe.png", dir.path())
                .unwrap()
                .is_empty()
        );
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
