//! Retrieved memory snippets as a system message.

use oxydra_memory::RetrievedChunk;
use oxydra_types::Message;

/// The first line of the snippets message.
pub const RETRIEVAL_HEADER: &str = "Relevant context from memory:";

/// Snippets longer than this many characters are shortened.
const MAX_SNIPPET_CHARS: usize = 1_000;

/// The system message carrying `chunks`, one `- snippet` line each (line breaks inside a
/// snippet become spaces); `None` when there is nothing to inject.
pub fn snippets_message(chunks: &[RetrievedChunk]) -> Option<Message> {
    let mut lines = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        let flat: String = chunk.text.split_whitespace().collect::<Vec<_>>().join(" ");
        if flat.is_empty() {
            continue;
        }
        let snippet = match flat.char_indices().nth(MAX_SNIPPET_CHARS) {
            Some((cut, _)) => format!("{}…", flat.get(..cut).unwrap_or_default()),
            None => flat,
        };
        if !lines.contains(&snippet) {
            lines.push(snippet);
        }
    }
    if lines.is_empty() {
        return None;
    }
    let mut text = String::from(RETRIEVAL_HEADER);
    for line in lines {
        text.push_str("\n- ");
        text.push_str(&line);
    }
    Some(Message::system(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(text: &str) -> RetrievedChunk {
        RetrievedChunk {
            chunk_id: 1,
            session_id: None,
            text: text.into(),
            score: 1.0,
        }
    }

    #[test]
    fn formats_one_line_per_snippet() {
        let message = snippets_message(&[
            chunk("the deploy key\nis rotated monthly"),
            chunk("tabs, not spaces"),
        ])
        .unwrap();
        assert_eq!(
            message.text(),
            "Relevant context from memory:\n- the deploy key is rotated monthly\n- tabs, not spaces"
        );
    }

    #[test]
    fn empty_and_duplicate_snippets_are_skipped() {
        assert_eq!(snippets_message(&[]), None);
        assert_eq!(snippets_message(&[chunk("  \n ")]), None);
        let message = snippets_message(&[chunk("same"), chunk("same")]).unwrap();
        assert_eq!(message.text().matches("- same").count(), 1);
        let long = "é".repeat(5_000);
        let message = snippets_message(&[chunk(&long)]).unwrap();
        assert!(message.text().chars().count() < 1_100);
    }
}
