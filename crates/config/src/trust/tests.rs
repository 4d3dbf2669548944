use super::*;

fn store_in(dir: &Path) -> PathBuf {
    dir.join("oxydra").join("trusted.toml")
}

#[test]
fn a_missing_store_trusts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = TrustStore::open(&store_in(dir.path())).unwrap();
    assert!(store.entries().is_empty());
    assert_eq!(
        store.verdict(Path::new("/p/oxydra.toml"), b"x", &[]),
        Verdict::Untrusted
    );
}

#[test]
fn trusted_content_survives_a_round_trip_and_a_change_untrusts_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_in(dir.path());
    let key = Path::new("/p/oxydra.toml");
    let mut store = TrustStore::open(&path).unwrap();
    store.trust(key, b"[runtime]\napprove = \"always\"\n", &[]);
    store.save().unwrap();

    let store = TrustStore::open(&path).unwrap();
    assert_eq!(
        store.verdict(key, b"[runtime]\napprove = \"always\"\n", &[]),
        Verdict::Trusted
    );
    // One byte more is another file.
    assert_eq!(
        store.verdict(key, b"[runtime]\napprove = \"always\"\n ", &[]),
        Verdict::Changed
    );
    assert_eq!(
        store.verdict(
            Path::new("/q/oxydra.toml"),
            b"[runtime]\napprove = \"always\"\n",
            &[]
        ),
        Verdict::Untrusted
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the store is private: {mode:o}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["trusted.toml"]);
}

#[test]
fn trusting_again_replaces_and_revoking_forgets() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_in(dir.path());
    let key = Path::new("/p/oxydra.toml");
    let mut store = TrustStore::open(&path).unwrap();
    store.trust(key, b"one", &[]);
    store.trust(key, b"two", &[]);
    assert_eq!(store.entries().len(), 1);
    assert_eq!(store.verdict(key, b"two", &[]), Verdict::Trusted);
    assert_eq!(store.verdict(key, b"one", &[]), Verdict::Changed);
    assert!(store.revoke(key));
    assert!(!store.revoke(key));
    assert_eq!(store.verdict(key, b"two", &[]), Verdict::Untrusted);
}

#[test]
fn a_corrupt_store_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_in(dir.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    for text in ["[[trusted]\n", "[[trusted]]\npath = 3\n", "colour = 1\n"] {
        std::fs::write(&path, text).unwrap();
        let error = TrustStore::open(&path).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("trusted.toml"), "{message}");
        assert!(message.contains("not a valid trust store"), "{message}");
    }
    std::fs::write(&path, [0xff, 0xfe, 0x00]).unwrap();
    assert!(TrustStore::open(&path).is_err());
}

#[test]
fn keys_canonicalise_the_directory_but_not_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::write(real.join("oxydra.toml"), "").unwrap();
    std::os::unix::fs::symlink(&real, dir.path().join("via")).unwrap();
    std::os::unix::fs::symlink(real.join("oxydra.toml"), real.join("link.toml")).unwrap();
    let canonical = real.canonicalize().unwrap();
    assert_eq!(
        key_of(&dir.path().join("via/oxydra.toml")),
        canonical.join("oxydra.toml")
    );
    assert_eq!(
        key_of(&dir.path().join("via/link.toml")),
        canonical.join("link.toml")
    );
}

#[test]
fn the_hash_is_sha256() {
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn a_launched_file_that_changed_or_was_never_recorded_untrusts_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_in(dir.path());
    let key = Path::new("/p/oxydra.toml");
    let script = PathBuf::from("/p/tools/mcp.sh");
    let now = [(script.clone(), Some(sha256_hex(b"exit 0")))];
    let mut store = TrustStore::open(&path).unwrap();
    store.trust(key, b"cfg", &now);
    store.save().unwrap();
    let store = TrustStore::open(&path).unwrap();
    assert_eq!(store.verdict(key, b"cfg", &now), Verdict::Trusted);
    let changed = [(script.clone(), Some(sha256_hex(b"touch x")))];
    assert_eq!(
        store.verdict(key, b"cfg", &changed),
        Verdict::LaunchedChanged(script.clone())
    );
    let missing = [(script.clone(), None)];
    assert_eq!(
        store.verdict(key, b"cfg", &missing),
        Verdict::LaunchedChanged(script.clone())
    );
    // A file added beside it (a script's directory is hashed whole) or one gone.
    let added = PathBuf::from("/p/tools/json.py");
    let more = [now[0].clone(), (added.clone(), Some(sha256_hex(b"evil")))];
    assert_eq!(
        store.verdict(key, b"cfg", &more),
        Verdict::LaunchedChanged(added)
    );
    assert_eq!(
        store.verdict(key, b"cfg", &[]),
        Verdict::LaunchedChanged(script.clone())
    );
    // A record written before launched files were hashed holds none.
    std::fs::write(
        &path,
        format!(
            "[[trusted]]\npath = \"/p/oxydra.toml\"\nsha256 = \"{}\"\n",
            sha256_hex(b"cfg")
        ),
    )
    .unwrap();
    let old = TrustStore::open(&path).unwrap();
    assert_eq!(old.verdict(key, b"cfg", &[]), Verdict::Trusted);
    assert_eq!(
        old.verdict(key, b"cfg", &now),
        Verdict::LaunchedChanged(script)
    );
}

#[test]
fn paths_are_quoted_for_the_shell_when_needed() {
    assert_eq!(
        shell_quoted(Path::new("/ws/oxydra.toml")),
        "/ws/oxydra.toml"
    );
    assert_eq!(
        shell_quoted(Path::new("/my ws/it's/oxydra.toml")),
        "'/my ws/it'\\''s/oxydra.toml'"
    );
}
