//! What a tool line shows of a call's output: its last few lines, indented under the
//! line, with `… N more lines` when some were cut. The output is the text the model got,
//! scrubbed before it reaches the renderer.

use crate::terminal_text::one_line;

/// At most this many lines of output are shown.
const TAIL_LINES: usize = 4;
/// A line longer than this many characters is cut with `…`.
const LINE_CHARS: usize = 160;

/// The tools whose output is not shown under their line: a file's whole content
/// (`file_read`), a change already shown as a diff (`file_write`, `file_edit`) and the
/// plan, which is drawn as a list of its own (`update_plan`).
const QUIET_TOOLS: [&str; 4] = ["file_read", "file_write", "file_edit", "update_plan"];

/// The lines to print under the tool line of `name` that returned `output`: the last
/// [`TAIL_LINES`] non-blank lines, each indented and made safe for a terminal, after a
/// `… N more lines` line when there were more. `None` when there is nothing to show.
pub fn tail(name: &str, output: &str) -> Option<String> {
    if QUIET_TOOLS.contains(&name) {
        return None;
    }
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim_end)
        .filter(|line| !line.is_empty())
        .collect();
    if lines.is_empty() {
        return None;
    }
    let cut = lines.len().saturating_sub(TAIL_LINES);
    let mut shown = Vec::with_capacity(TAIL_LINES + 1);
    if cut > 0 {
        let noun = if cut == 1 { "line" } else { "lines" };
        shown.push(format!("    … {cut} more {noun}"));
    }
    for line in lines.iter().skip(cut) {
        shown.push(format!("    {}", shorten(line)));
    }
    Some(shown.join("\n"))
}

fn shorten(line: &str) -> String {
    let safe = one_line(line);
    if safe.chars().count() <= LINE_CHARS {
        return safe.into_owned();
    }
    let mut cut: String = safe.chars().take(LINE_CHARS.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_shown_whole_and_indented() {
        let shown = tail("shell_exec", "exit code: 0\nstdout:\nhello\n").unwrap();
        assert_eq!(shown, "    exit code: 0\n    stdout:\n    hello");
    }

    #[test]
    fn long_output_keeps_its_last_lines_and_counts_the_rest() {
        let output: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        let shown = tail("shell_exec", &output).unwrap();
        assert_eq!(
            shown,
            "    … 6 more lines\n    line 7\n    line 8\n    line 9\n    line 10"
        );
        let five: String = (1..=5).map(|n| format!("l{n}\n")).collect();
        assert!(
            tail("mcp_tool", &five)
                .unwrap()
                .starts_with("    … 1 more line\n")
        );
    }

    #[test]
    fn file_contents_diffs_plans_and_blank_output_are_not_shown() {
        for name in QUIET_TOOLS {
            assert_eq!(tail(name, "text"), None);
        }
        assert_eq!(tail("shell_exec", "\n  \n"), None);
    }

    #[test]
    fn control_characters_and_long_lines_cannot_take_the_terminal() {
        let shown = tail("shell_exec", "\u{1b}[2Jcleared\r\nnext").unwrap();
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
        assert!(!shown.contains('\r'), "{shown:?}");
        let long = "x".repeat(1_000);
        let shown = tail("shell_exec", &long).unwrap();
        assert_eq!(shown.chars().count(), 4 + LINE_CHARS);
        assert!(shown.ends_with('…'));
    }
}
