//! The recorded provider streams kept in the repository.

use std::path::PathBuf;

/// The folder of recorded provider streams (`tests/fixtures` at the workspace root),
/// or the folder `OXYDRA_FIXTURES` names when it is set.
pub fn fixtures_dir() -> PathBuf {
    match std::env::var_os("OXYDRA_FIXTURES") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures")),
    }
}

/// The bytes of the fixture `name` (a path inside [`fixtures_dir`], e.g.
/// `openai/gpt4o_mini_stream_turn1.sse`).
///
/// # Panics
/// When the file cannot be read: a missing fixture fails the test that asked for it,
/// naming the path.
#[allow(clippy::panic)]
pub fn fixture(name: &str) -> Vec<u8> {
    let path = fixtures_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("fixture {}: {error}", path.display()))
}

/// The fixture `name` as text.
///
/// # Panics
/// When the file cannot be read or is not UTF-8.
#[allow(clippy::panic)]
pub fn fixture_text(name: &str) -> String {
    String::from_utf8(fixture(name)).unwrap_or_else(|error| panic!("fixture {name}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_streams_are_found() {
        assert!(fixtures_dir().join("README.md").is_file());
        let text = fixture_text("anthropic/basic_response.sse");
        assert!(text.contains("event: message_stop"));
    }

    #[test]
    #[should_panic(expected = "fixture")]
    fn a_missing_fixture_names_its_path() {
        let _ = fixture("no/such/file.sse");
    }
}
