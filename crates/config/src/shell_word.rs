//! Paths written as shell words, for commands a message tells the user to run
//! (`oxydra trust '/my ws/oxydra.toml'`).

use std::path::Path;

/// `path` as a shell word: as is when it holds only safe characters, else in single quotes.
pub fn shell_quoted(path: &Path) -> String {
    let text = path.display().to_string();
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        text
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}
