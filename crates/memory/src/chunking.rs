//! Splitting long texts into overlapping chunks for indexing.

/// Split `text` into chunks of at most `max_chars` characters, neighbours sharing about
/// `overlap` characters.
///
/// Cuts fall on character boundaries and prefer, within the second half of a chunk, a
/// paragraph break, then a line break, then any whitespace; only a text without
/// whitespace is cut mid-word. An overlap starts at a word boundary when one is near.
/// Chunks are trimmed and empty ones dropped. `overlap` is capped at half of `max_chars`
/// and `max_chars` is at least 1.
///
/// ```
/// let chunks = oxydra_memory::chunk_text("alpha beta gamma delta", 11, 0);
/// assert_eq!(chunks, vec!["alpha beta", "gamma delta"]);
/// ```
pub fn chunk_text(text: &str, max_chars: usize, overlap: usize) -> Vec<String> {
    let max_chars = max_chars.max(1);
    let overlap = overlap.min(max_chars / 2);
    // Byte offset of every char, plus the end.
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect();
    let chars: Vec<char> = text.chars().collect();
    let total = chars.len();
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < total {
        let hard_end = (start + max_chars).min(total);
        let end = if hard_end == total {
            total
        } else {
            find_cut(&chars, start + (max_chars / 2).max(1), hard_end).unwrap_or(hard_end)
        };
        if let (Some(&from), Some(&to)) = (bounds.get(start), bounds.get(end)) {
            let chunk = text.get(from..to).unwrap_or("").trim();
            if !chunk.is_empty() {
                chunks.push(chunk.to_owned());
            }
        }
        if end >= total {
            break;
        }
        let mut next = end.saturating_sub(overlap).max(start + 1);
        if overlap > 0 {
            next = align_to_word(&chars, next, end);
        }
        start = next;
    }
    chunks
}

/// The best cut in `low..=high` (a char index the chunk ends before): after a paragraph
/// break, else after a newline, else after whitespace.
fn find_cut(chars: &[char], low: usize, high: usize) -> Option<usize> {
    let window = |pred: &dyn Fn(usize) -> bool| (low.max(1)..=high).rev().find(|&i| pred(i));
    let is = |i: usize, c: char| chars.get(i) == Some(&c);
    window(&|i| i >= 2 && is(i - 1, '\n') && is(i - 2, '\n'))
        .or_else(|| window(&|i| is(i - 1, '\n')))
        .or_else(|| window(&|i| chars.get(i - 1).is_some_and(|c| c.is_whitespace())))
}

/// Move `from` forward to the start of a word, but not to or past `limit`.
fn align_to_word(chars: &[char], from: usize, limit: usize) -> usize {
    let starts_word = |i: usize| {
        i == 0
            || (chars.get(i - 1).is_some_and(|c| c.is_whitespace())
                && chars.get(i).is_some_and(|c| !c.is_whitespace()))
    };
    (from..limit).find(|&i| starts_word(i)).unwrap_or(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_chunk_and_empty_is_none() {
        assert_eq!(chunk_text("hello world", 100, 10), vec!["hello world"]);
        assert!(chunk_text("", 100, 10).is_empty());
        assert!(chunk_text("   \n\n  ", 3, 1).is_empty());
    }

    #[test]
    fn chunks_respect_the_limit_and_cover_every_word() {
        let text = (0..300)
            .map(|i| format!("word{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        let chunks = chunk_text(&text, 80, 20);
        assert!(chunks.len() > 5);
        for chunk in &chunks {
            assert!(chunk.chars().count() <= 80, "{chunk}");
            assert!(!chunk.starts_with(' ') && !chunk.ends_with(' '));
        }
        for i in 0..300 {
            let word = format!("word{i}");
            assert!(
                chunks.iter().any(|c| c.split(' ').any(|w| w == word)),
                "{word} missing"
            );
        }
        // Neighbours overlap: the first word of a chunk occurs in the previous one.
        for pair in chunks.windows(2) {
            let first_word = pair[1].split(' ').next().unwrap();
            assert!(pair[0].split(' ').any(|w| w == first_word));
        }
    }

    #[test]
    fn prefers_paragraph_breaks() {
        let text = format!("{}\n\n{}", "a ".repeat(30).trim(), "b ".repeat(30).trim());
        let chunks = chunk_text(&text, 100, 0);
        assert_eq!(chunks.len(), 2);
        assert!(chunks[0].chars().all(|c| c == 'a' || c == ' '));
    }

    #[test]
    fn multibyte_text_without_spaces_is_cut_on_char_boundaries() {
        let text = "héllo✓".repeat(50);
        let chunks = chunk_text(&text, 7, 3);
        assert!(chunks.iter().all(|c| c.chars().count() <= 7));
        assert_eq!(chunks.first().unwrap(), "héllo✓h");
        assert!(chunk_text("ab", 0, 5).len() == 2);
    }
}
