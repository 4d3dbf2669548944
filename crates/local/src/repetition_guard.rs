//! The repetition guard: ends a generation that has fallen into a loop, where the
//! same run of tokens (a line, a phrase, one token) comes again and again. Small
//! models do this under greedy or near-greedy decoding, and without the guard a
//! loop runs until the output cap or the turn timeout.
//!
//! The guard watches the output for a periodic tail: for every period `p` up to
//! [`MAX_PERIOD`] tokens it counts how many of the latest tokens equal the token
//! `p` places before them. When that run covers [`MIN_COPIES`] copies of the
//! period and at least [`MIN_SPAN`] tokens, the tail is a loop. Each token costs
//! `O(MAX_PERIOD)` comparisons, nothing next to a decode step.

use std::collections::VecDeque;

/// The longest repeated unit the guard recognises, in tokens (a long line).
pub const MAX_PERIOD: usize = 200;
/// How many copies of the unit in a row make a loop.
pub const MIN_COPIES: usize = 4;
/// The fewest repeated tokens that make a loop, so that short legitimate runs
/// (a rule of `=`, a table's `|---|---|`, an indented block) pass.
pub const MIN_SPAN: usize = 48;

/// Watches a generation's tokens for a loop.
#[derive(Debug, Clone)]
pub struct RepetitionGuard {
    /// The latest tokens, at most [`MAX_PERIOD`].
    recent: VecDeque<i32>,
    /// `runs[p - 1]`: how many of the latest tokens equal the token `p` before them.
    runs: Vec<usize>,
}

impl Default for RepetitionGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl RepetitionGuard {
    /// A guard that has seen nothing.
    pub fn new() -> Self {
        Self {
            recent: VecDeque::with_capacity(MAX_PERIOD),
            runs: vec![0; MAX_PERIOD],
        }
    }

    /// Takes the next token; `true` when the output now ends in a loop.
    pub fn push(&mut self, token: i32) -> bool {
        let len = self.recent.len();
        let mut looping = false;
        for (index, run) in self.runs.iter_mut().enumerate() {
            let period = index + 1;
            let before = len
                .checked_sub(period)
                .and_then(|at| self.recent.get(at))
                .copied();
            if before == Some(token) {
                *run += 1;
                if *run >= (period * (MIN_COPIES - 1)).max(MIN_SPAN) {
                    looping = true;
                }
            } else {
                *run = 0;
            }
        }
        if self.recent.len() == MAX_PERIOD {
            self.recent.pop_front();
        }
        self.recent.push_back(token);
        looping
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `tokens`; the index of the token at which the guard tripped.
    fn trips_at(tokens: impl IntoIterator<Item = i32>) -> Option<usize> {
        let mut guard = RepetitionGuard::new();
        tokens.into_iter().position(|token| guard.push(token))
    }

    /// Pseudo-random tokens from a small LCG: text that does not repeat.
    fn prose(n: usize, seed: u32) -> Vec<i32> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                i32::try_from(state >> 17).unwrap()
            })
            .collect()
    }

    #[test]
    fn a_line_repeated_over_and_over_is_stopped_on_its_fourth_copy() {
        let line = prose(20, 7);
        let mut tokens = prose(100, 1);
        for _ in 0..50 {
            tokens.extend(&line);
        }
        let at = trips_at(tokens).expect("the loop was not caught");
        // 100 tokens of prose, then the line: caught once the 4th copy is complete.
        assert_eq!(at, 100 + 4 * 20 - 1);
    }

    #[test]
    fn one_token_repeated_is_stopped_after_the_minimum_span() {
        let mut tokens = prose(10, 3);
        tokens.extend(std::iter::repeat_n(42, 500));
        assert_eq!(trips_at(tokens), Some(10 + MIN_SPAN));
    }

    #[test]
    fn a_long_unit_up_to_the_longest_period_is_caught() {
        let unit = prose(MAX_PERIOD, 11);
        let tokens: Vec<i32> = unit.iter().copied().cycle().take(MAX_PERIOD * 6).collect();
        assert_eq!(trips_at(tokens), Some(MAX_PERIOD * 4 - 1));
    }

    #[test]
    fn ordinary_text_with_short_repeats_passes() {
        let mut tokens = prose(3000, 5);
        // A table: the same separator row three times, with rows between.
        let separator = [10, 11, 10, 11, 10, 11, 12];
        for row in 0..3 {
            tokens.extend(separator);
            tokens.extend(prose(15, 20 + row));
        }
        // A short run of one token (a rule of `=`).
        tokens.extend(std::iter::repeat_n(61, MIN_SPAN - 1));
        tokens.extend(prose(100, 99));
        // The same line three times: still not a loop.
        let line = prose(30, 4);
        for _ in 0..3 {
            tokens.extend(&line);
        }
        tokens.extend(prose(100, 98));
        assert_eq!(trips_at(tokens), None);
    }
}
