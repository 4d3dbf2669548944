//! The answer's Markdown rendered for a terminal, progressively.
//!
//! Text arrives in pieces. Each line is rendered as soon as it is whole (a heading, a
//! list item, a line of a paragraph or of a code block): the renderer lays out each
//! line on its own, so nothing is lost by not waiting for the block. Only a table is
//! kept until it ends, since its columns are laid out together. The line still being
//! written is shown as a preview: its tail, unstyled (without the `**`, `__`, `~~` and
//! backtick markers the rendering will turn into styles), on one row that is redrawn
//! as it grows and replaced by the rendered line once the line ends. The preview never
//! takes more than one row, so replacing it never moves the cursor up (and never
//! touches a line printed before it).
//!
//! Everything the model wrote goes through the terminal sanitizer before the
//! renderer sees it: the renderer's styling is the only escape sequence printed.

use termimad::MadSkin;
use unicode_width::UnicodeWidthChar;

use crate::terminal_text::{lines, one_line};

/// What a piece of streamed text changes on the terminal.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Update {
    /// Rendered lines, each ending with a newline, to print for good.
    pub committed: String,
    /// The preview of the line still being written (one row, no newline); empty when
    /// there is none.
    pub preview: String,
}

impl Update {
    /// Whether it shows text (not only blank lines).
    pub fn visible(&self) -> bool {
        !self.committed.trim().is_empty() || !self.preview.is_empty()
    }
}

/// Streamed answer text being rendered.
pub struct MarkdownStream {
    /// The line not ended yet.
    partial: String,
    /// The lines of a table not ended yet.
    table: Vec<String>,
    /// Inside a code fence: its opening line (` ``` ` or `~~~`, maybe with a language).
    fence: Option<String>,
    /// A line with text was rendered since the last flush: blank lines before the
    /// first one are dropped.
    started: bool,
    /// The last line rendered was blank: a run of blank lines shows as one.
    after_blank: bool,
    /// How wide the terminal is: fixed, or asked at each preview (it may be resized).
    width: Width,
}

impl MarkdownStream {
    /// A stream whose preview fits a terminal `columns` wide (for tests).
    #[cfg(test)]
    pub fn new(columns: usize) -> Self {
        Self::with_width(Width::Fixed(columns))
    }

    /// A stream for the terminal the process runs on, whose width is asked at each
    /// preview (a terminal made narrower mid-answer would wrap a wider one).
    pub fn for_terminal() -> Self {
        Self::with_width(Width::Terminal)
    }

    fn with_width(width: Width) -> Self {
        Self {
            partial: String::new(),
            table: Vec::new(),
            fence: None,
            started: false,
            after_blank: false,
            width,
        }
    }

    /// The columns a preview may take. One column is left free: a row filled to the
    /// last column makes some terminals wrap, and the preview must stay on one row.
    fn preview_columns(&self) -> usize {
        let columns = match self.width {
            #[cfg(test)]
            Width::Fixed(columns) => columns,
            Width::Terminal => usize::from(termimad::terminal_size().0),
        };
        columns.saturating_sub(1).max(1)
    }

    /// Adds `text`: the lines it completed, rendered, and the preview of the line
    /// after them.
    pub fn push(&mut self, text: &str) -> Update {
        self.partial.push_str(text);
        let mut committed = String::new();
        while let Some(end) = self.partial.find('\n') {
            let rest = self.partial.split_off(end.saturating_add(1));
            let line = std::mem::replace(&mut self.partial, rest);
            self.line(&line, &mut committed);
        }
        Update {
            committed,
            preview: self.preview(),
        }
    }

    /// Renders whatever is left (the answer, or the text before a tool call, ended):
    /// the line being written as a whole line, an unfinished table.
    pub fn flush(&mut self) -> String {
        let mut committed = String::new();
        let partial = std::mem::take(&mut self.partial);
        if !partial.trim().is_empty() {
            self.line(&partial, &mut committed);
        }
        self.end_table(&mut committed);
        self.fence = None;
        self.started = false;
        self.after_blank = false;
        committed
    }

    /// Renders one whole line (with or without its line end) into `out`, or keeps it
    /// (a table row).
    fn line(&mut self, line: &str, out: &mut String) {
        let line = line.trim_end_matches(['\n', '\r']);
        let trimmed = line.trim();
        let is_fence = trimmed.starts_with("```") || trimmed.starts_with("~~~");
        if let Some(fence) = &self.fence {
            if is_fence {
                self.fence = None;
            } else {
                out.push_str(&render(&format!("{fence}\n{line}\n```")));
            }
            return;
        }
        if is_fence {
            self.end_table(out);
            // The renderer takes the language off; only the fence matters.
            self.fence = Some("```".to_owned());
            self.started = true;
            self.after_blank = false;
            return;
        }
        if trimmed.starts_with('|') {
            self.table.push(line.to_owned());
            return;
        }
        self.end_table(out);
        if trimmed.is_empty() {
            if self.started && !self.after_blank {
                out.push('\n');
                self.after_blank = true;
            }
            return;
        }
        out.push_str(&render(line));
        self.started = true;
        self.after_blank = false;
    }

    /// Renders the table kept so far, if any.
    fn end_table(&mut self, out: &mut String) {
        if self.table.is_empty() {
            return;
        }
        let table = std::mem::take(&mut self.table).join("\n");
        out.push_str(&render(&table));
        self.started = true;
        self.after_blank = false;
    }

    /// The tail of the line being written (or, between two rows of a table, of its
    /// last row) that fits one row, sanitized; empty when it is blank.
    fn preview(&self) -> String {
        let source = if self.partial.trim().is_empty() {
            self.table.last().map_or("", String::as_str)
        } else {
            &self.partial
        };
        let mut flat = source.replace('\t', " ");
        for marker in ["**", "__", "~~", "`"] {
            flat = flat.replace(marker, "");
        }
        let shown = one_line(flat.trim());
        tail(&shown, self.preview_columns())
    }
}

/// How wide the terminal a [`MarkdownStream`] previews on is.
#[derive(Debug, Clone, Copy)]
enum Width {
    /// This many columns.
    #[cfg(test)]
    Fixed(usize),
    /// Asked of the terminal each time.
    Terminal,
}

/// The end of `text` that fits `columns` columns, `…` first when it was cut. Widths
/// are counted generously (East Asian ambiguous characters as two columns): a preview
/// drawn narrower than counted is harmless, one drawn wider would wrap.
fn tail(text: &str, columns: usize) -> String {
    let width = |c: char| c.width_cjk().unwrap_or(2);
    if text.chars().map(width).sum::<usize>() <= columns {
        return text.to_owned();
    }
    let mut kept = Vec::new();
    // One column for the `…` (two if counted as ambiguous).
    let mut used = 2;
    for c in text.chars().rev() {
        used += width(c);
        if used > columns {
            break;
        }
        kept.push(c);
    }
    kept.push('…');
    kept.into_iter().rev().collect()
}

/// `markdown` (the model's) sanitized and rendered for the terminal (its width, its
/// colours); every line ends with a newline.
pub fn render(markdown: &str) -> String {
    let markdown = lines(markdown);
    let rendered = MadSkin::default().term_text(&markdown).to_string();
    if rendered.ends_with('\n') {
        rendered
    } else {
        format!("{rendered}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream() -> MarkdownStream {
        MarkdownStream::new(40)
    }

    #[test]
    fn a_line_is_rendered_as_soon_as_it_ends() {
        let mut stream = stream();
        let update = stream.push("# Title\nsome **bold");
        assert!(update.committed.contains("Title"), "{update:?}");
        assert!(!update.committed.contains('#'), "{update:?}");
        assert_eq!(update.preview, "some bold");
        let update = stream.push("** text\n\nnext");
        assert!(update.committed.contains("bold"), "{update:?}");
        assert!(!update.committed.contains("**"), "rendered: {update:?}");
        assert!(update.committed.ends_with("\n\n"), "{update:?}");
        assert_eq!(update.preview, "next");
        let rest = stream.flush();
        assert!(rest.contains("next"), "{rest:?}");
        assert_eq!(stream.flush(), "");
    }

    #[test]
    fn the_first_words_show_before_the_line_ends() {
        let mut stream = stream();
        let update = stream.push("The answer");
        assert!(update.visible());
        assert_eq!(update.committed, "");
        assert_eq!(update.preview, "The answer");
        let update = stream.push(" is a very long paragraph that goes on and on");
        assert_eq!(update.preview.chars().count(), 38, "{update:?}");
        assert!(update.preview.starts_with('…'), "{update:?}");
        assert!(update.preview.ends_with("goes on and on"), "{update:?}");
    }

    #[test]
    fn blank_lines_show_nothing_and_a_run_of_them_is_one() {
        let mut stream = stream();
        let update = stream.push("\n\n  \n");
        assert!(!update.visible(), "{update:?}");
        assert_eq!(update.committed, "");
        let update = stream.push("one\n\n\n\ntwo\n");
        assert_eq!(update.committed.matches("\n\n").count(), 1, "{update:?}");
    }

    #[test]
    fn code_lines_show_as_they_come_and_a_table_when_whole() {
        let mut stream = stream();
        let update = stream.push("```rust\nfn a() {}\n");
        assert!(update.committed.contains("fn a() {}"), "{update:?}");
        assert!(!update.committed.contains("```"), "{update:?}");
        let update = stream.push("\nfn b() {}\n```\n| a | b |\n|---|---|\n| 1 | 2 |\n");
        assert!(update.committed.contains("fn b() {}"), "{update:?}");
        assert!(
            !update.committed.contains('1'),
            "the table is kept: {update:?}"
        );
        assert_eq!(update.preview, "| 1 | 2 |");
        let update = stream.push("a `code` ~~span~~ and __more");
        assert_eq!(update.preview, "a code span and more");
        let update = stream.push("after\n");
        assert!(update.committed.contains('1') && update.committed.contains("after"));
        assert!(!update.committed.contains("---"), "{update:?}");
    }

    #[test]
    fn the_models_escapes_never_reach_the_rendering() {
        let mut stream = stream();
        let attack = "Done.\u{1b}]2;pwned\u{7}\u{1b}[8;30;40m type y\r\u{9b}1A";
        let update = stream.push(attack);
        for raw in ['\u{1b}', '\u{7}', '\r', '\u{9b}'] {
            assert!(!update.preview.contains(raw), "{raw:?} in {update:?}");
        }
        let rendered = format!("{}{}", stream.push("\n").committed, render(attack));
        assert!(rendered.contains("\\u{1b}]2;pwned"), "{rendered:?}");
        assert!(!rendered.contains("\u{1b}]"), "{rendered:?}");
        assert!(!rendered.contains("\u{1b}[8"), "{rendered:?}");
        assert!(
            !rendered.contains(['\r', '\u{7}', '\u{9b}']),
            "{rendered:?}"
        );
    }

    #[test]
    fn a_preview_is_cut_by_display_width() {
        assert_eq!(tail("abc", 3), "abc");
        assert_eq!(tail("abcdef", 5), "…def");
        // Wide characters count two columns.
        assert_eq!(tail("中文中文", 6), "…中文");
    }
}
