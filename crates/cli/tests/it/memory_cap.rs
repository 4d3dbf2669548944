//! `[memory] max_message_bytes` reaches the store: a message over the configured cap
//! is refused by the database (naming the setting) and the same run under the default
//! cap stores it; a bad value names the key.

use crate::common;

use common::{Sandbox, stderr};
use oxydra_test_support::{MockServer, openai};

/// A PNG of `size` bytes (its signature and header, then zeros).
fn png_of(size: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0".to_vec();
    bytes.resize(size, 0);
    bytes
}

fn strict_openai() -> MockServer {
    MockServer::builder()
        .strict_openai()
        .replies(vec![openai::text("a picture")])
        .start()
        .unwrap()
}

#[test]
fn the_configured_cap_is_the_stores_and_the_default_takes_the_same_message() {
    let sandbox = Sandbox::new();
    let image = sandbox.path().join("shot.png");
    // 6 KiB of image: about 8 KiB stored as base64, under 32 MiB and over 4 KiB.
    std::fs::write(&image, png_of(6 * 1024)).unwrap();
    sandbox.write_trusted_config("[memory]\nmax_message_bytes = 4096\n");
    let server = strict_openai();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--image", image.to_str().unwrap()],
        "what is this?",
    );
    let err = stderr(&output);
    assert_ne!(output.status.code(), Some(0), "{err}");
    assert!(
        err.contains("max_message_bytes") && err.contains("4096"),
        "{err}"
    );
    assert!(server.requests().is_empty(), "sent despite the refusal");

    // The same run with the default cap (the setting removed) is stored.
    std::fs::remove_file(sandbox.path().join("oxydra.toml")).unwrap();
    let server = strict_openai();
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--image", image.to_str().unwrap()],
        "what is this?",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_bad_cap_names_the_key() {
    for (value, expected) in [
        ("0", "expected at least 1"),
        ("\"32MiB\"", "expected an integer"),
    ] {
        let sandbox = Sandbox::new();
        std::fs::write(
            sandbox.path().join("oxydra.toml"),
            format!("[memory]\nmax_message_bytes = {value}\n"),
        )
        .unwrap();
        let server = strict_openai();
        let output = sandbox.run_openai(&server.openai_url(), &[], "hello");
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{value}: {err}");
        assert!(err.contains("memory.max_message_bytes"), "{value}: {err}");
        assert!(err.contains(expected), "{value}: {err}");
        assert!(server.requests().is_empty());
    }
}
