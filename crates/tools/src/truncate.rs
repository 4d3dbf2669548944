//! The one truncation function every tool's output goes through.

use std::borrow::Cow;

use crate::error::ToolError;

/// Cut `text` to at most `limit` bytes (on a char boundary) and append a marker
/// `[... truncated N bytes ...]` saying how many bytes were cut. Text within the
/// limit is returned as is.
///
/// ```
/// use oxydra_tools::truncate_output;
///
/// assert_eq!(truncate_output("short", 16), "short");
/// let long = "é".repeat(10); // 20 bytes
/// let cut = truncate_output(&long, 5);
/// assert_eq!(cut, "éé\n[... truncated 16 bytes ...]");
/// ```
pub fn truncate_output(text: &str, limit: usize) -> Cow<'_, str> {
    truncate_with_dropped(text, limit, 0)
}

/// Like [`truncate_output`], for text that is itself the head of a longer output:
/// `already_dropped` bytes were cut before (e.g. while capturing a process's
/// output) and are counted in the marker.
pub(crate) fn truncate_with_dropped(
    text: &str,
    limit: usize,
    already_dropped: usize,
) -> Cow<'_, str> {
    if text.len() <= limit && already_dropped == 0 {
        return Cow::Borrowed(text);
    }
    let mut cut = limit.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let head = text.get(..cut).unwrap_or_default();
    let dropped = text.len() - cut + already_dropped;
    let mut out = String::with_capacity(cut + 40);
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("[... truncated {dropped} bytes ...]"));
    Cow::Owned(out)
}

/// An error whose message is over `limit` bytes, with the message cut as
/// [`truncate_output`] cuts output (an error can echo what the model sent, such as a
/// megabyte-long path). `InvalidArguments` and `Failed` keep their kind; any other
/// long error becomes [`ToolError::Failed`] with its cut message. Shorter errors are
/// returned as they are.
pub(crate) fn truncate_error(error: ToolError, limit: usize) -> ToolError {
    match error {
        ToolError::InvalidArguments { message } if message.len() > limit => {
            ToolError::InvalidArguments {
                message: truncate_output(&message, limit).into_owned(),
            }
        }
        ToolError::Failed(message) if message.len() > limit => {
            ToolError::Failed(truncate_output(&message, limit).into_owned())
        }
        ToolError::InvalidArguments { .. } | ToolError::Failed(_) => error,
        other => {
            let message = other.to_string();
            if message.len() <= limit {
                return other;
            }
            ToolError::Failed(truncate_output(&message, limit).into_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_limit_is_borrowed_unchanged() {
        assert!(matches!(truncate_output("abc", 3), Cow::Borrowed("abc")));
        assert_eq!(truncate_output("", 0), "");
    }

    #[test]
    fn cuts_and_counts_bytes() {
        let text = "a".repeat(100);
        let out = truncate_output(&text, 10);
        assert_eq!(
            out,
            format!("{}\n[... truncated 90 bytes ...]", "a".repeat(10))
        );
    }

    #[test]
    fn never_splits_a_char() {
        // '€' is 3 bytes; a limit inside it backs off to the previous boundary.
        let text = "€€€";
        for limit in 0..9 {
            let out = truncate_output(text, limit);
            let head = out.split("[...").next().unwrap().trim_end_matches('\n');
            assert!(head.len() <= limit);
            assert_eq!(head.len() % 3, 0);
        }
        assert_eq!(truncate_output(text, 4), "€\n[... truncated 6 bytes ...]");
    }

    #[test]
    fn long_errors_are_cut_with_the_marker_and_short_ones_kept() {
        let short = truncate_error(ToolError::NotFound { path: "a".into() }, 100);
        assert!(matches!(short, ToolError::NotFound { .. }));
        let long = truncate_error(
            ToolError::NotFound {
                path: "p".repeat(1_000_000),
            },
            64,
        );
        let text = long.to_string();
        assert!(matches!(long, ToolError::Failed(_)));
        assert!(text.starts_with("`ppp"), "{text}");
        assert!(text.ends_with(" bytes ...]"), "{text}");
        assert!(text.len() < 64 + 40, "{}", text.len());
        let invalid = truncate_error(
            ToolError::InvalidArguments {
                message: "v".repeat(1_000),
            },
            10,
        );
        assert_eq!(
            invalid.to_string(),
            "invalid arguments: vvvvvvvvvv\n[... truncated 990 bytes ...]"
        );
    }

    #[test]
    fn counts_bytes_dropped_earlier() {
        assert_eq!(
            truncate_with_dropped("abc", 10, 5),
            "abc\n[... truncated 5 bytes ...]"
        );
        assert_eq!(
            truncate_with_dropped("abcdef", 3, 5),
            "abc\n[... truncated 8 bytes ...]"
        );
    }
}
