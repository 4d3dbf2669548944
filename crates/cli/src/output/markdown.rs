//! The answer's Markdown rendered for a terminal. Text arrives in pieces; it is kept
//! until a block is whole (a blank line outside a code fence ends one) and each whole
//! block is rendered then, so the answer still appears as it comes, block by block.

use termimad::MadSkin;

/// Streamed answer text not rendered yet.
#[derive(Default)]
pub struct MarkdownStream {
    pending: String,
}

impl MarkdownStream {
    /// Adds `text`; returns the rendering of the blocks it completed, if any.
    pub fn push(&mut self, text: &str) -> Option<String> {
        self.pending.push_str(text);
        let end = complete_blocks_end(&self.pending);
        if end == 0 {
            return None;
        }
        let rest = self.pending.split_off(end);
        let blocks = std::mem::replace(&mut self.pending, rest);
        Some(render_blocks(&blocks))
    }

    /// Renders whatever is left (the answer, or the text before a tool call, ended).
    pub fn flush(&mut self) -> Option<String> {
        if self.pending.trim().is_empty() {
            self.pending.clear();
            return None;
        }
        let rest = std::mem::take(&mut self.pending);
        Some(render(rest.trim_end()))
    }
}

/// `markdown` rendered for the terminal (its width, its colours); every line ends
/// with a newline.
pub fn render(markdown: &str) -> String {
    let rendered = MadSkin::default().term_text(markdown).to_string();
    if rendered.ends_with('\n') {
        rendered
    } else {
        format!("{rendered}\n")
    }
}

/// Whole blocks, each followed by the blank line that ended it.
fn render_blocks(blocks: &str) -> String {
    format!("{}\n", render(blocks.trim_end()))
}

/// The byte offset just past the last blank line that ends a block outside a code
/// fence; 0 when no block is whole yet.
fn complete_blocks_end(text: &str) -> usize {
    let mut in_fence = false;
    let mut end = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        offset += line.len();
        if !line.ends_with('\n') {
            break;
        }
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
        } else if trimmed.is_empty() && !in_fence && offset > line.len() {
            end = offset;
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_rendered_once_a_blank_line_ends_it() {
        let mut stream = MarkdownStream::default();
        assert_eq!(stream.push("# Title\nsome **bold"), None);
        let rendered = stream.push("** text\n\nnext").unwrap();
        assert!(rendered.contains("Title"), "{rendered:?}");
        assert!(rendered.contains("bold"), "{rendered:?}");
        assert!(
            !rendered.contains("**"),
            "markers are rendered: {rendered:?}"
        );
        assert!(!rendered.contains("next"), "{rendered:?}");
        let rest = stream.flush().unwrap();
        assert!(rest.contains("next"), "{rest:?}");
        assert_eq!(stream.flush(), None);
    }

    #[test]
    fn a_blank_line_inside_a_code_fence_does_not_end_the_block() {
        assert_eq!(complete_blocks_end("```\nfn a() {}\n\nfn b() {}\n"), 0);
        let text = "```\na\n\nb\n```\n\nafter";
        assert_eq!(complete_blocks_end(text), text.find("after").unwrap());
    }

    #[test]
    fn leading_blank_lines_and_an_unfinished_line_end_nothing() {
        assert_eq!(complete_blocks_end("\n"), 0);
        assert_eq!(complete_blocks_end("text\n\n"), 6);
        assert_eq!(complete_blocks_end("text\n"), 0);
    }
}
