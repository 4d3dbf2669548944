use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use oxydra_types::{CheckpointEntry, EntryState};

use super::*;

const CAP: u64 = 1024 * 1024;

/// Every entry under `root`: kind, mode, content or target.
fn tree(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, rel: &Path, out: &mut BTreeMap<String, String>) {
        let mut names: Vec<_> = fs::read_dir(root.join(rel))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        for name in names {
            let child = rel.join(name);
            let path = root.join(&child);
            let meta = fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            let key = child.to_str().unwrap().to_owned();
            if meta.file_type().is_symlink() {
                out.insert(
                    key,
                    format!("link {}", fs::read_link(&path).unwrap().display()),
                );
            } else if meta.is_dir() {
                out.insert(key, format!("dir {mode:o}"));
                walk(root, &child, out);
            } else {
                let text = String::from_utf8_lossy(&fs::read(&path).unwrap()).into_owned();
                out.insert(key, format!("file {mode:o} {text}"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, Path::new(""), &mut out);
    out
}

fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::create_dir_all(root.join("src/deep")).unwrap();
    fs::write(root.join("src/main.rs"), "fn main() { old(); }\n").unwrap();
    fs::write(root.join("src/deep/gone.txt"), "to be removed\n").unwrap();
    fs::write(root.join("notes.md"), "notes\n").unwrap();
    fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
    symlink("notes.md", root.join("latest")).unwrap();
    (dir, root)
}

/// What a command like `sed -i; rm; mv; chmod; ln -sf; mkdir` does.
fn mutate(root: &Path) {
    fs::write(root.join("src/main.rs"), "fn main() { new(); }\n").unwrap();
    fs::remove_dir_all(root.join("src/deep")).unwrap();
    fs::rename(root.join("notes.md"), root.join("NOTES.md")).unwrap();
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::remove_file(root.join("latest")).unwrap();
    symlink("NOTES.md", root.join("latest")).unwrap();
    fs::create_dir(root.join("build")).unwrap();
    fs::write(root.join("build/out.o"), "obj").unwrap();
}

#[test]
fn a_command_s_changes_are_captured_and_undone_exactly() {
    let (_dir, root) = workspace();
    let original = tree(&root);
    let before = scan(&root, None, CAP).unwrap();
    mutate(&root);
    let after = scan(&root, Some(&before), CAP).unwrap();
    let captured = changes(&root, &before, &after);
    let paths: Vec<&str> = captured.entries.iter().map(|e| e.path.as_str()).collect();
    for path in [
        "src/main.rs",
        "src/deep",
        "src/deep/gone.txt",
        "notes.md",
        "NOTES.md",
        "run.sh",
        "latest",
        "build",
        "build/out.o",
    ] {
        assert!(paths.contains(&path), "{path} missing from {paths:?}");
    }
    assert!(captured.not_captured.is_empty());
    let changed = tree(&root);
    let restored = restore(&root, &captured.entries, &captured.blobs, false).unwrap();
    assert_eq!(tree(&root), original);

    // The restore is a change of its own, and undoing it brings the turn back.
    restore(
        &root,
        &restored.inverse.entries,
        &restored.inverse.blobs,
        false,
    )
    .unwrap();
    assert_eq!(tree(&root), changed);
}

#[test]
fn an_unchanged_workspace_captures_nothing_and_a_touch_is_no_change() {
    let (_dir, root) = workspace();
    let before = scan(&root, None, CAP).unwrap();
    let same = fs::read(root.join("notes.md")).unwrap();
    fs::write(root.join("notes.md"), same).unwrap();
    let after = scan(&root, Some(&before), CAP).unwrap();
    assert!(changes(&root, &before, &after).is_empty());
}

#[test]
fn a_file_changed_since_is_not_overwritten_without_force() {
    let (_dir, root) = workspace();
    let before = scan(&root, None, CAP).unwrap();
    fs::write(root.join("src/main.rs"), "fn main() { agent(); }\n").unwrap();
    let after = scan(&root, Some(&before), CAP).unwrap();
    let captured = changes(&root, &before, &after);
    fs::write(root.join("src/main.rs"), "fn main() { person(); }\n").unwrap();
    let err = restore(&root, &captured.entries, &captured.blobs, false).unwrap_err();
    let CheckpointError::Conflicts(conflicts) = &err else {
        panic!("{err}");
    };
    assert_eq!(conflicts[0].path, "src/main.rs");
    assert!(
        conflicts[0].diff.contains("-fn main() { person(); }"),
        "{}",
        conflicts[0].diff
    );
    assert!(err.to_string().contains("src/main.rs"));
    assert_eq!(
        fs::read_to_string(root.join("src/main.rs")).unwrap(),
        "fn main() { person(); }\n"
    );
    restore(&root, &captured.entries, &captured.blobs, true).unwrap();
    assert_eq!(
        fs::read_to_string(root.join("src/main.rs")).unwrap(),
        "fn main() { old(); }\n"
    );
}

#[test]
fn paths_that_climb_out_are_absolute_or_pass_a_symlink_are_refused() {
    let (_dir, root) = workspace();
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path(), root.join("out")).unwrap();
    let blob = Arc::new(b"pwned".to_vec());
    let hash = content_hash(&blob);
    let blobs = BTreeMap::from([(hash.clone(), blob)]);
    let file = EntryState::File {
        hash,
        size: 5,
        mode: 0o644,
    };
    let outside_file = outside.path().join("x");
    for path in [
        "../x".to_owned(),
        "src/../../x".to_owned(),
        outside_file.to_str().unwrap().to_owned(),
        "out/x".to_owned(),
        String::new(),
    ] {
        let entries = [
            CheckpointEntry {
                path: "notes.md".into(),
                before: EntryState::Absent,
                after: EntryState::Absent,
            },
            CheckpointEntry {
                path: path.clone(),
                before: file.clone(),
                after: EntryState::Absent,
            },
        ];
        let err = restore(&root, &entries, &blobs, true).unwrap_err();
        assert!(
            matches!(err, CheckpointError::UnsafePath { .. }),
            "{path}: {err}"
        );
        assert!(!outside_file.exists(), "{path}");
        assert!(root.join("notes.md").exists(), "{path}: nothing is touched");
    }
}

#[test]
fn a_file_over_the_cap_is_named_as_not_captured() {
    let (_dir, root) = workspace();
    fs::write(root.join("big.bin"), vec![7u8; 4096]).unwrap();
    let before = scan(&root, None, 1024).unwrap();
    assert!(before.held_bytes() <= 1024);
    fs::write(root.join("big.bin"), b"small now").unwrap();
    fs::write(root.join("notes.md"), "edited\n").unwrap();
    let after = scan(&root, Some(&before), 1024).unwrap();
    let captured = changes(&root, &before, &after);
    assert_eq!(captured.not_captured.len(), 1);
    assert_eq!(captured.not_captured[0].path, "big.bin");
    assert_eq!(captured.not_captured[0].bytes, 4096);
    assert!(captured.entries.iter().any(|e| e.path == "notes.md"));
}

#[test]
fn calls_of_one_turn_merge_into_one_change() {
    let (_dir, root) = workspace();
    let first = scan(&root, None, CAP).unwrap();
    fs::write(root.join("notes.md"), "one\n").unwrap();
    fs::write(root.join("tmp.txt"), "scratch").unwrap();
    let second = scan(&root, Some(&first), CAP).unwrap();
    let mut turn = changes(&root, &first, &second);
    fs::write(root.join("notes.md"), "two\n").unwrap();
    fs::remove_file(root.join("tmp.txt")).unwrap();
    let third = scan(&root, Some(&second), CAP).unwrap();
    turn.merge(changes(&root, &second, &third));
    let paths: Vec<&str> = turn.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        ["notes.md"],
        "a file made and removed in the turn is no change"
    );
    restore(&root, &turn.entries, &turn.blobs, false).unwrap();
    assert_eq!(
        fs::read_to_string(root.join("notes.md")).unwrap(),
        "notes\n"
    );
}

#[test]
fn a_restore_that_fails_part_way_names_what_was_put_back_and_what_not() {
    let (_dir, root) = workspace();
    let original = tree(&root);
    let before = scan(&root, None, CAP).unwrap();
    mutate(&root);
    let after = scan(&root, Some(&before), CAP).unwrap();
    let captured = changes(&root, &before, &after);
    // Someone adds a file to the directory the turn created: the directory cannot be
    // removed (not empty) — a failure once writing began, root or not.
    fs::write(root.join("build/theirs.txt"), "mine").unwrap();
    let err = restore(&root, &captured.entries, &captured.blobs, false).unwrap_err();
    let CheckpointError::Partial {
        restored, failed, ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!(
        failed.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
        ["build"]
    );
    for path in ["src/main.rs", "notes.md", "build/out.o", "latest"] {
        assert!(restored.iter().any(|p| p == path), "{path}: {restored:?}");
    }
    assert!(!restored.iter().any(|p| p == "build"), "{restored:?}");
    let message = err.to_string();
    assert!(
        message.contains("NOT put back: build (") && message.contains("src/main.rs"),
        "{message}"
    );
    // What was put back is: the others did not wait for the failing one.
    assert_eq!(
        fs::read_to_string(root.join("src/main.rs")).unwrap(),
        "fn main() { old(); }\n"
    );
    assert_eq!(
        fs::read_to_string(root.join("build/theirs.txt")).unwrap(),
        "mine"
    );
    // With the cause gone, the same restore runs again unforced: paths already put
    // back are no conflict.
    fs::remove_file(root.join("build/theirs.txt")).unwrap();
    restore(&root, &captured.entries, &captured.blobs, false).unwrap();
    assert_eq!(tree(&root), original);
}

#[test]
fn a_partial_restore_gives_the_inverse_of_what_it_put_back_only() {
    let (_dir, root) = workspace();
    let before = scan(&root, None, CAP).unwrap();
    mutate(&root);
    let mutated = tree(&root);
    let after = scan(&root, Some(&before), CAP).unwrap();
    let captured = changes(&root, &before, &after);
    fs::write(root.join("build/theirs.txt"), "mine").unwrap();
    let err = restore(&root, &captured.entries, &captured.blobs, false).unwrap_err();
    let CheckpointError::Partial {
        restored, inverse, ..
    } = err
    else {
        panic!("not partial");
    };
    let inverse_paths: Vec<&str> = inverse.entries.iter().map(|e| e.path.as_str()).collect();
    assert!(!inverse_paths.contains(&"build"), "{inverse_paths:?}");
    for path in &restored {
        assert!(
            inverse_paths.contains(&path.as_str()),
            "{path}: {inverse_paths:?}"
        );
    }
    // Every content the inverse needs is at hand, and none it does not.
    for hash in inverse.entries.iter().filter_map(|e| e.before.hash()) {
        assert!(inverse.blobs.contains_key(hash), "{hash}");
    }
    assert_eq!(
        inverse.blobs.len(),
        inverse
            .entries
            .iter()
            .filter_map(|e| e.before.hash())
            .collect::<std::collections::BTreeSet<_>>()
            .len()
    );
    // Restoring the inverse takes back what the partial restore did.
    restore(&root, &inverse.entries, &inverse.blobs, false).unwrap();
    let mut expected = mutated;
    expected.insert("build/theirs.txt".into(), "file 644 mine".into());
    let mut now = tree(&root);
    // The umask decides the new file's mode: compare contents only for it.
    now.insert("build/theirs.txt".into(), "file 644 mine".into());
    assert_eq!(now, expected);
}
