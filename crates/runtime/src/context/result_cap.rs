//! The cap on tool results relative to the model's context window.
//!
//! A tool's own output limit (16 KiB) is about the tool, not the model: a whole
//! repository's listing fits it and still overflows an 8,192-token window, and then
//! no prompt can be sent (the newest tool results are always in it). So every batch
//! of results shares at most half of what the prompt may hold besides the system
//! prompt and the tool schemas, each result an equal part of it. The cap is counted in
//! bytes: a token of any byte-level tokenizer is at least one byte, so a result within
//! its cap fits whatever tokenizer the provider counts with. A cut result keeps its
//! head and ends with a marker saying how much was cut and why; the model reads the
//! marker, and the session stores what the model read.
//!
//! Models with large windows are not touched: their cap is above the tools' own limit.

use super::budget::{ContextBudget, FixedTokens};
use super::tokens;

/// The smallest cap of one result, however small the window: enough for a short
/// answer and the marker.
pub const MIN_RESULT_BYTES: usize = 256;

/// How many bytes of tool results a batch may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResultCap {
    batch_bytes: usize,
}

impl ResultCap {
    /// The cap for a prompt under `budget` whose system prompt and tool schemas take
    /// `fixed_tokens`: half of the rest.
    pub fn new(budget: ContextBudget, fixed_tokens: u64) -> Self {
        let room = budget.available().saturating_sub(fixed_tokens) / 2;
        Self {
            batch_bytes: usize::try_from(room).unwrap_or(usize::MAX),
        }
    }

    /// The cap for a prompt under `budget` that sends `system_prompt` and the tool
    /// schemas of `schema_tokens`, both measured by their estimates.
    pub fn for_prompt(
        budget: ContextBudget,
        schema_tokens: &FixedTokens,
        system_prompt: Option<&str>,
    ) -> Self {
        let system = system_prompt.map_or(0, |text| u64::from(tokens::estimate(text)));
        Self::new(budget, schema_tokens.estimate().saturating_add(system))
    }

    /// The bytes each of `results` results may take (at least [`MIN_RESULT_BYTES`]).
    pub fn per_result(&self, results: usize) -> usize {
        (self.batch_bytes / results.max(1)).max(MIN_RESULT_BYTES)
    }

    /// `content` cut to `limit` bytes, marker included, when it is longer (a limit
    /// shorter than the marker keeps the marker alone); as it is otherwise.
    pub fn apply(content: String, limit: usize) -> String {
        if content.len() <= limit {
            return content;
        }
        let total = content.len();
        // The marker's own length depends on the numbers in it; the longest they can
        // be is the total's.
        let reserve = marker(total, total).len() + 1;
        let mut cut = limit.saturating_sub(reserve).min(total);
        while !content.is_char_boundary(cut) {
            cut -= 1;
        }
        let head = content.get(..cut).unwrap_or_default();
        let mut out = String::with_capacity(limit);
        out.push_str(head);
        if !head.is_empty() && !head.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&marker(total - cut, total));
        out
    }
}

/// The line that ends a cut result.
fn marker(cut: usize, total: usize) -> String {
    format!(
        "[... cut {cut} of {total} bytes: the output is longer than the model's context \
         window allows ...]"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(window: u32) -> ContextBudget {
        ContextBudget {
            context_window: window,
            output_reserve: 1_000,
            safety_buffer: 192,
        }
    }

    #[test]
    fn the_cap_is_half_the_room_besides_the_fixed_part_shared_by_the_batch() {
        let cap = ResultCap::new(budget(8_192), 1_000);
        assert_eq!(cap.per_result(1), 3_000);
        assert_eq!(cap.per_result(3), 1_000);
        assert_eq!(
            cap.per_result(0),
            3_000,
            "no results is no division by zero"
        );
    }

    #[test]
    fn the_fixed_part_is_the_system_prompt_and_the_schemas() {
        let schemas = FixedTokens::new("s".repeat(3_000));
        let cap = ResultCap::for_prompt(budget(8_192), &schemas, Some(&"p".repeat(3_000)));
        assert_eq!(cap, ResultCap::new(budget(8_192), 2_000));
        assert_eq!(
            ResultCap::for_prompt(budget(8_192), &FixedTokens::default(), None),
            ResultCap::new(budget(8_192), 0)
        );
    }

    #[test]
    fn a_tiny_window_still_leaves_the_floor() {
        let cap = ResultCap::new(budget(100), 10_000);
        assert_eq!(cap.per_result(1), MIN_RESULT_BYTES);
        assert_eq!(cap.per_result(50), MIN_RESULT_BYTES);
    }

    #[test]
    fn a_large_window_is_above_the_tools_own_limit() {
        let cap = ResultCap::new(budget(128_000), 2_000);
        assert!(cap.per_result(1) > 16 * 1024);
    }

    #[test]
    fn short_content_is_untouched() {
        assert_eq!(ResultCap::apply("hello".into(), 5), "hello");
        assert_eq!(ResultCap::apply(String::new(), 0), "");
    }

    #[test]
    fn long_content_keeps_its_head_within_the_limit_and_names_the_cut() {
        let content = "line\n".repeat(2_000);
        let out = ResultCap::apply(content.clone(), 1_000);
        assert!(out.len() <= 1_000, "{}", out.len());
        assert!(out.starts_with("line\nline\n"));
        let marker_at = out.find("[... cut ").unwrap();
        let cut: usize = out[marker_at + 9..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        // The head kept is exactly what the marker does not count.
        assert!(content.starts_with(&out[..content.len() - cut]));
        assert!(
            out.ends_with(&format!(
                "[... cut {cut} of 10000 bytes: the output is longer than the model's \
                 context window allows ...]"
            )),
            "{out}"
        );
    }

    #[test]
    fn multibyte_text_is_cut_on_a_char_boundary() {
        let content = "é".repeat(5_000);
        let out = ResultCap::apply(content, 301);
        assert!(out.len() <= 301);
        assert!(out.starts_with('é'));
        assert!(out.contains("[... cut "));
    }

    #[test]
    fn a_limit_below_the_marker_keeps_only_the_marker() {
        let out = ResultCap::apply("x".repeat(10_000), 10);
        assert!(out.starts_with("[... cut 10000 of 10000 bytes"), "{out}");
    }
}
