//! Making a new database's image durable without holding up its open.
//!
//! A new database ([`new_database`](super::new_database)) is written to a temporary
//! file and hard-linked to its name at once. The image is synced on a thread of its
//! own while SQLite opens the file, and the temporary name is removed once the sync is
//! done. Until then the temporary name is the *marker*: a second link to the
//! database's file that says "its bytes may not be on the disk yet". Nothing is written
//! to the database while the marker is there:
//! - the store that created it waits for the sync before its first statement after
//!   the open ([`PendingSync::wait`]);
//! - anyone else who opens the file while a marker is there (another store, the
//!   coordinator's run store, another process) syncs it first ([`settle`], run by
//!   [`secure_database_file`](super::file_mode::secure_database_file)).
//!
//! So after a power loss, a marker still there means nothing was written to the file
//! since it was created, and a file that is shorter than the image or holds zeros
//! where the image does not (its bytes never reached the disk) can only be a damaged
//! copy of the image: [`settle`] writes the image into it again. A file that holds
//! anything else is left as it is. Before this, the image was synced before the link,
//! on the way to a run's first request (a new database's fsync is the slowest step of
//! a run's start on a small disk: ~0.9 ms of ~6).
//!
//! Elsewhere than Unix (no link counts to find a marker by) the image is synced before
//! the link; the thread's sync then finds nothing left to write, and it removes the
//! temporary name.

use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

#[cfg(unix)]
pub(super) use unix::settle;

/// A new database's file and its marker, not yet synced.
struct Unsynced {
    file: File,
    marker: PathBuf,
}

impl Unsynced {
    /// Syncs the file, then removes the marker. A sync that fails keeps the marker, so
    /// the next open syncs (or repairs) the file before it writes.
    fn finish(self) {
        match self.file.sync_all() {
            Ok(()) => remove_marker(&self.marker),
            Err(error) => tracing::warn!(
                marker = %self.marker.display(),
                %error,
                "could not sync a new database; the next open syncs it"
            ),
        }
    }
}

/// Removes a marker; one already gone (another opener settled it) is fine.
fn remove_marker(marker: &std::path::Path) {
    match std::fs::remove_file(marker) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => tracing::warn!(
            marker = %marker.display(),
            %error,
            "could not remove a new database's temporary name"
        ),
    }
}

type Slot = Arc<Mutex<Option<Unsynced>>>;

fn take(slot: &Slot) -> Option<Unsynced> {
    slot.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// The sync of a new database's image, running on a thread of its own; nothing (the
/// database was there already, or is in memory) when made by [`PendingSync::none`].
#[derive(Debug)]
pub(super) struct PendingSync {
    slot: Option<Slot>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Unsynced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unsynced")
            .field("marker", &self.marker)
            .finish_non_exhaustive()
    }
}

impl PendingSync {
    /// Nothing to wait for.
    pub(super) fn none() -> Self {
        Self {
            slot: None,
            thread: None,
        }
    }

    /// Starts syncing `file` (the new database, also linked as `marker`). Should no
    /// thread start, [`PendingSync::wait`] syncs it itself.
    pub(super) fn start(file: File, marker: PathBuf) -> Self {
        let slot: Slot = Arc::new(Mutex::new(Some(Unsynced { file, marker })));
        let theirs = Arc::clone(&slot);
        let thread = std::thread::Builder::new()
            .name("oxydra-db-sync".into())
            .spawn(move || {
                if let Some(unsynced) = take(&theirs) {
                    unsynced.finish();
                }
            })
            .ok();
        Self {
            slot: Some(slot),
            thread,
        }
    }

    /// Returns once the image is synced and its marker removed (or the sync failed and
    /// the marker is kept for the next open).
    pub(super) fn wait(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Some(unsynced) = self.slot.as_ref().and_then(take) {
            unsynced.finish();
        }
    }
}

#[cfg(unix)]
mod unix {
    use std::fs::OpenOptions;
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    use std::path::{Path, PathBuf};

    use nix::fcntl::OFlag;

    use super::super::new_database::{IMAGE, MARKER_INFIX};
    use super::remove_marker;

    /// The size of the pieces a damaged copy is checked in: a disk sector, the least a
    /// write that did not reach the disk leaves as it was.
    const SECTOR: usize = 512;

    /// Makes the database at `path` durable if a new database's marker is still
    /// linked to it (see the module's doc): syncs it, writes the image into it again
    /// if it is a damaged copy of it, and removes the marker. Anything else (no second
    /// link, a second link that is not a marker, a symbolic link at `path`) is left as
    /// it is. Failures are warnings: the open that follows reports a real one.
    pub(in crate::sqlite) fn settle(path: &Path) {
        if let Err(error) = settle_marked(path) {
            tracing::warn!(path = %path.display(), %error, "could not sync a new database");
        }
    }

    fn settle_marked(path: &Path) -> std::io::Result<()> {
        let Ok(metadata) = std::fs::symlink_metadata(path) else {
            return Ok(());
        };
        if !metadata.file_type().is_file() || metadata.nlink() < 2 {
            return Ok(());
        }
        let identity = (metadata.dev(), metadata.ino());
        let Some(marker) = find_marker(path, identity)? else {
            return Ok(());
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(OFlag::O_NOFOLLOW.bits())
            .open(path)?;
        let opened = file.metadata()?;
        if (opened.dev(), opened.ino()) != identity {
            // Replaced since it was looked at: not the file the marker names.
            return Ok(());
        }
        let mut content = Vec::with_capacity(IMAGE.len());
        let most = u64::try_from(IMAGE.len())
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        (&mut file).take(most).read_to_end(&mut content)?;
        if content != IMAGE && is_damaged_image(&content) {
            file.seek(SeekFrom::Start(0))?;
            file.write_all(IMAGE)?;
            tracing::warn!(
                path = %path.display(),
                "a new database was left unsynced by a crash and damaged; it holds the empty schema again"
            );
        }
        file.sync_all()?;
        remove_marker(&marker);
        Ok(())
    }

    /// Whether `content` is what is left of the image when some of its writes never
    /// reached the disk: no longer than it, and each sector either the image's or zeros.
    pub(super) fn is_damaged_image(content: &[u8]) -> bool {
        content.len() <= IMAGE.len()
            && content
                .chunks(SECTOR)
                .zip(IMAGE.chunks(SECTOR))
                .all(|(have, image)| have.iter().all(|byte| *byte == 0) || image.starts_with(have))
    }

    /// The marker linked to the file `identity` (device, inode) at `path`: a name in
    /// its directory made of the database's name and [`MARKER_INFIX`].
    fn find_marker(path: &Path, identity: (u64, u64)) -> std::io::Result<Option<PathBuf>> {
        let Some(name) = path.file_name() else {
            return Ok(None);
        };
        let mut prefix = name.as_bytes().to_vec();
        prefix.extend_from_slice(MARKER_INFIX.as_bytes());
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if !entry.file_name().as_bytes().starts_with(&prefix) {
                continue;
            }
            let candidate = entry.path();
            let Ok(metadata) = std::fs::symlink_metadata(&candidate) else {
                continue;
            };
            if metadata.file_type().is_file() && (metadata.dev(), metadata.ino()) == identity {
                return Ok(Some(candidate));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::path::Path;

    use super::super::new_database::IMAGE;
    use super::super::new_database::tests::created_from_image;
    use super::unix::is_damaged_image;
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// What a crash between the link and the sync leaves: the database and its
    /// marker, two links to `content`.
    fn left_by_a_crash(dir: &Path, content: &[u8]) -> PathBuf {
        let path = dir.join("left.db");
        let marker = dir.join("left.db.new-4242-0-17");
        std::fs::write(&marker, content).unwrap();
        std::fs::hard_link(&marker, &path).unwrap();
        path
    }

    #[test]
    fn another_opener_syncs_a_new_database_before_its_creator_has() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.db");
        let sync = created_from_image(&path);
        settle(&path);
        assert_eq!(names(dir.path()), ["shared.db"]);
        // The creator's own sync then finds its marker gone, and that is fine.
        sync.wait();
        assert_eq!(names(dir.path()), ["shared.db"]);
        assert_eq!(std::fs::read(&path).unwrap(), IMAGE);
    }

    #[test]
    fn a_store_on_a_new_database_waits_for_the_sync_before_its_first_statement() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let memory =
            super::super::SqliteMemory::open(&path, super::super::SqliteConfig::default()).unwrap();
        let conn = memory.inner.conn();
        let left: Vec<String> = names(dir.path())
            .into_iter()
            .filter(|name| name.contains(".new-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        conn.execute("INSERT INTO sessions (session_id, created_at, updated_at, last_sequence) VALUES ('ses_a', 1, 2, 0)", [])
            .unwrap();
    }

    #[test]
    fn securing_a_file_settles_a_marker_as_the_run_store_opens_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = left_by_a_crash(dir.path(), IMAGE.get(..3000).unwrap());
        super::super::secure_database_file(&path);
        assert_eq!(names(dir.path()), ["left.db"]);
        assert_eq!(std::fs::read(&path).unwrap(), IMAGE);
    }

    #[test]
    fn a_whole_unsynced_image_left_by_a_crash_is_kept_and_its_marker_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = left_by_a_crash(dir.path(), IMAGE);
        settle(&path);
        assert_eq!(names(dir.path()), ["left.db"]);
        assert_eq!(std::fs::read(&path).unwrap(), IMAGE);
    }

    #[test]
    fn a_short_or_holed_copy_left_by_a_crash_gets_the_image_again() {
        let short = IMAGE.get(..5000).unwrap().to_vec();
        let mut holed = IMAGE.to_vec();
        holed.get_mut(4096..12288).unwrap().fill(0);
        for (what, content) in [("empty", Vec::new()), ("short", short), ("holed", holed)] {
            let dir = tempfile::tempdir().unwrap();
            let path = left_by_a_crash(dir.path(), &content);
            settle(&path);
            assert_eq!(names(dir.path()), ["left.db"], "{what}");
            assert_eq!(std::fs::read(&path).unwrap(), IMAGE, "{what}");
        }
    }

    #[test]
    fn a_file_that_is_not_a_copy_of_the_image_is_left_as_it_is() {
        // A database that was written to (a changed first page, a longer file): its
        // marker is stale and goes, the file stays.
        let mut changed = IMAGE.to_vec();
        *changed.get_mut(24).unwrap() ^= 1;
        let mut longer = IMAGE.to_vec();
        longer.extend_from_slice(&[7; 4096]);
        for content in [changed, longer, b"not a database".to_vec()] {
            let dir = tempfile::tempdir().unwrap();
            let path = left_by_a_crash(dir.path(), &content);
            settle(&path);
            assert_eq!(names(dir.path()), ["left.db"]);
            assert_eq!(std::fs::read(&path).unwrap(), content);
        }
    }

    #[test]
    fn a_second_link_that_is_not_a_marker_and_a_marker_of_another_file_are_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kept.db");
        std::fs::write(&path, &IMAGE[..100]).unwrap();
        // The person's own hard link, and a killed creator's file that was never linked.
        std::fs::hard_link(&path, dir.path().join("backup.db")).unwrap();
        std::fs::write(dir.path().join("kept.db.new-1-0-1"), IMAGE).unwrap();
        settle(&path);
        assert_eq!(
            names(dir.path()),
            ["backup.db", "kept.db", "kept.db.new-1-0-1"]
        );
        assert_eq!(std::fs::read(&path).unwrap(), &IMAGE[..100]);
    }

    #[test]
    fn a_symbolic_link_at_the_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere.db");
        std::fs::write(&target, &IMAGE[..100]).unwrap();
        let marker = dir.path().join("linked.db.new-1-0-1");
        std::fs::hard_link(&target, &marker).unwrap();
        let path = dir.path().join("linked.db");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        settle(&path);
        assert_eq!(std::fs::read(&target).unwrap(), &IMAGE[..100]);
        assert!(marker.exists());
    }

    #[test]
    fn damaged_means_each_sector_the_images_or_zeros_and_no_longer() {
        assert!(is_damaged_image(b""));
        assert!(is_damaged_image(IMAGE));
        assert!(is_damaged_image(&vec![0; IMAGE.len()]));
        assert!(!is_damaged_image(&vec![0; IMAGE.len() + 1]));
        let mut torn = IMAGE.to_vec();
        *torn.get_mut(700).unwrap() ^= 0xff;
        assert!(!is_damaged_image(&torn));
    }

    #[test]
    fn a_sync_whose_thread_did_not_start_is_done_by_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("inline.db");
        let marker = dir.path().join("inline.db.new-1-0-1");
        std::fs::write(&marker, IMAGE).unwrap();
        std::fs::hard_link(&marker, &path).unwrap();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&marker)
            .unwrap();
        let slot: Slot = Arc::new(Mutex::new(Some(Unsynced { file, marker })));
        PendingSync {
            slot: Some(slot),
            thread: None,
        }
        .wait();
        assert_eq!(names(dir.path()), ["inline.db"]);
    }
}
