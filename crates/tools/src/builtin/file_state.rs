//! What `file_write` and `file_edit` record before a change and check after a crash
//! ([`Tool::state_before`](crate::Tool::state_before),
//! [`Tool::rerun_after_crash`](crate::Tool::rerun_after_crash)): the file's content
//! hash before the call (and, for an edit, the hash it will have after), compared on
//! resume with the file as it is. A file that holds what the call meant to write is
//! done; a file untouched since is safe to write again; anything else (changed by
//! someone else, or half written) is unknown.

use std::io::Read;
use std::path::Path;

use crate::beneath::WorkspaceDir;
use crate::checkpoint::content_hash;
use crate::rerun::RerunSafety;
use crate::workspace_policy::WorkspacePolicy;

/// Files larger than this are not hashed: a call on one is [`RerunSafety::Unknown`].
pub const STATE_MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// What stands in the state for a file that does not exist.
const ABSENT: &str = "absent";

/// The file at `path`, as the file tools would read it.
enum Seen {
    Missing,
    Bytes(Vec<u8>),
    /// Outside the workspace, not a regular file, too large or unreadable.
    Unusable,
}

fn read(root: &Path, path: &str) -> Seen {
    let Ok(policy) = WorkspacePolicy::new(root) else {
        return Seen::Unusable;
    };
    let Ok(resolved) = policy.resolve(path) else {
        return Seen::Unusable;
    };
    let opened =
        WorkspaceDir::open(policy.root()).and_then(|dir| dir.open_read(&resolved.absolute));
    let file = match opened {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Seen::Missing,
        Err(_) => return Seen::Unusable,
    };
    match file.metadata() {
        Ok(meta) if meta.is_file() && meta.len() <= STATE_MAX_FILE_BYTES => {}
        _ => return Seen::Unusable,
    }
    let mut bytes = Vec::new();
    match file.take(STATE_MAX_FILE_BYTES + 1).read_to_end(&mut bytes) {
        Ok(read) if read as u64 <= STATE_MAX_FILE_BYTES => Seen::Bytes(bytes),
        _ => Seen::Unusable,
    }
}

impl Seen {
    /// The state word of the file: its hash, [`ABSENT`], or `None` when unusable.
    fn digest(&self) -> Option<String> {
        match self {
            Self::Missing => Some(ABSENT.to_owned()),
            Self::Bytes(bytes) => Some(content_hash(bytes)),
            Self::Unusable => None,
        }
    }
}

/// The decision for a file now at `now`, meant to become `intended`, that was
/// `before` when the call started.
fn decide(now: Option<&str>, intended: Option<&str>, before: Option<&str>) -> RerunSafety {
    match now {
        None => RerunSafety::Unknown,
        Some(now) if intended == Some(now) => RerunSafety::AlreadyDone,
        Some(now) if before == Some(now) => RerunSafety::Safe,
        Some(_) => RerunSafety::Unknown,
    }
}

/// `file_write`'s state: the file's hash (or `absent`).
pub(super) fn write_before(root: &Path, path: &str) -> Option<String> {
    read(root, path).digest()
}

/// `file_write` of `content` to `path`, interrupted: done when the file holds
/// `content`, safe when it is as it was before.
pub(super) fn write_rerun(
    root: &Path,
    path: &str,
    content: &str,
    before: Option<&str>,
) -> RerunSafety {
    let now = read(root, path).digest();
    let intended = content_hash(content.as_bytes());
    decide(now.as_deref(), Some(&intended), before)
}

/// `file_edit`'s state: the file's hash, then — when the edit applies (`old` occurs
/// exactly once in its text) — the hash of the edited text, space separated.
pub(super) fn edit_before(root: &Path, path: &str, old: &str, new: &str) -> Option<String> {
    let seen = read(root, path);
    let before = seen.digest()?;
    let edited = match &seen {
        Seen::Bytes(bytes) => std::str::from_utf8(bytes)
            .ok()
            .filter(|text| !old.is_empty() && text.matches(old).count() == 1)
            .map(|text| content_hash(text.replacen(old, new, 1).as_bytes())),
        Seen::Missing | Seen::Unusable => None,
    };
    Some(match edited {
        Some(edited) => format!("{before} {edited}"),
        None => before,
    })
}

/// `file_edit` interrupted: done when the file holds the edited text, safe when it is
/// as it was before.
pub(super) fn edit_rerun(root: &Path, path: &str, before: Option<&str>) -> RerunSafety {
    let now = read(root, path).digest();
    let mut words = before.unwrap_or_default().split(' ');
    let was = words.next().filter(|word| !word.is_empty());
    let intended = words.next();
    decide(now.as_deref(), intended, was)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_done_safe_or_unknown_by_what_the_file_holds() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.txt"), "old").unwrap();
        let before = write_before(root, "a.txt");
        assert_eq!(before.as_deref(), Some(content_hash(b"old").as_str()));
        // Untouched: writing again is safe.
        assert_eq!(
            write_rerun(root, "a.txt", "new", before.as_deref()),
            RerunSafety::Safe
        );
        // Written: done.
        std::fs::write(root.join("a.txt"), "new").unwrap();
        assert_eq!(
            write_rerun(root, "a.txt", "new", before.as_deref()),
            RerunSafety::AlreadyDone
        );
        // Half written or changed by someone else: unknown.
        std::fs::write(root.join("a.txt"), "ne").unwrap();
        assert_eq!(
            write_rerun(root, "a.txt", "new", before.as_deref()),
            RerunSafety::Unknown
        );
        // Nothing recorded before: unknown unless done.
        assert_eq!(
            write_rerun(root, "a.txt", "new", None),
            RerunSafety::Unknown
        );
    }

    #[test]
    fn a_new_file_is_absent_before_and_safe_while_still_absent() {
        let dir = tempfile::tempdir().unwrap();
        let before = write_before(dir.path(), "sub/new.txt");
        assert_eq!(before.as_deref(), Some(ABSENT));
        assert_eq!(
            write_rerun(dir.path(), "sub/new.txt", "x", before.as_deref()),
            RerunSafety::Safe
        );
    }

    #[test]
    fn paths_leading_out_or_directories_are_unknown() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(write_before(dir.path(), "../escape"), None);
        std::fs::create_dir(dir.path().join("d")).unwrap();
        assert_eq!(write_before(dir.path(), "d"), None);
        assert_eq!(
            write_rerun(dir.path(), "../escape", "x", Some(ABSENT)),
            RerunSafety::Unknown
        );
    }

    #[test]
    fn an_edit_is_done_when_the_file_holds_the_edited_text() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("e.txt"), "one two three").unwrap();
        let before = edit_before(root, "e.txt", "two", "2");
        assert_eq!(
            edit_rerun(root, "e.txt", before.as_deref()),
            RerunSafety::Safe
        );
        std::fs::write(root.join("e.txt"), "one 2 three").unwrap();
        assert_eq!(
            edit_rerun(root, "e.txt", before.as_deref()),
            RerunSafety::AlreadyDone
        );
        std::fs::write(root.join("e.txt"), "someone else's").unwrap();
        assert_eq!(
            edit_rerun(root, "e.txt", before.as_deref()),
            RerunSafety::Unknown
        );
    }

    #[test]
    fn an_edit_that_cannot_apply_records_only_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("e.txt"), "two two").unwrap();
        let before = edit_before(root, "e.txt", "two", "2").unwrap();
        assert!(!before.contains(' '), "{before}");
        // Running it again fails as it did: safe.
        assert_eq!(edit_rerun(root, "e.txt", Some(&before)), RerunSafety::Safe);
        assert_eq!(edit_rerun(root, "e.txt", None), RerunSafety::Unknown);
    }
}
