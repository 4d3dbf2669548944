//! The token cost of one message, and which count budgeting uses.

use oxydra_types::Message;

use super::tokens::{message_count, message_estimate, message_upper_bound};

/// Which count a context window budgets with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountMode {
    /// The cheap estimate (no encoder needed).
    Estimate,
    /// The exact `cl100k_base` count.
    Exact,
}

/// The sum of the counts under `mode` of messages paired with their costs (each exact
/// count computed once and kept in its [`MessageTokens`]).
pub(crate) fn sum_counted<'a>(
    messages: impl IntoIterator<Item = (&'a mut MessageTokens, &'a Message)>,
    mode: CountMode,
) -> u64 {
    messages
        .into_iter()
        .fold(0, |total: u64, (tokens, message)| {
            total.saturating_add(u64::from(tokens.counted(message, mode)))
        })
}

/// The token cost of one message: its upper bound and estimate, computed when the
/// message is added, and its exact count, computed the first time it is asked for and
/// then kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageTokens {
    upper: u32,
    estimate: u32,
    exact: Option<u32>,
}

impl MessageTokens {
    /// The cost of `message`, with only the upper bound and the estimate computed.
    pub fn new(message: &Message) -> Self {
        Self {
            upper: message_upper_bound(message),
            estimate: message_estimate(message),
            exact: None,
        }
    }

    /// The upper bound.
    pub fn upper(&self) -> u32 {
        self.upper
    }

    /// The estimate.
    pub fn estimate(&self) -> u32 {
        self.estimate
    }

    /// The count budgeting uses under `mode`: the estimate, or the exact count
    /// (computed once).
    pub fn counted(&mut self, message: &Message, mode: CountMode) -> u32 {
        match mode {
            CountMode::Estimate => self.estimate,
            CountMode::Exact => self.exact(message),
        }
    }

    /// The exact count if it has been computed.
    pub fn cached_exact(&self) -> Option<u32> {
        self.exact
    }

    /// Takes `exact` as the exact count (one computed earlier for the same message).
    pub(crate) fn seed_exact(&mut self, exact: u32) {
        self.exact = Some(exact.min(self.upper));
    }

    /// The exact count of `message` (which must be the message this was made for),
    /// computed once.
    pub fn exact(&mut self, message: &Message) -> u32 {
        match self.exact {
            Some(exact) => exact,
            None => {
                let exact = message_count(message).min(self.upper);
                self.exact = Some(exact);
                exact
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::tokens::MESSAGE_OVERHEAD;
    use oxydra_types::{CallId, ToolCall};

    #[test]
    fn exact_counts_are_computed_once_and_never_above_the_bound() {
        let call = ToolCall::new(CallId::from("call_1"), "file_read", r#"{"path":"a.rs"}"#);
        let messages = [
            Message::user("what is in a.rs?"),
            Message::assistant_with_tool_calls(None, vec![call]),
            Message::tool_result(CallId::from("call_1"), "file_read", "fn main() {}"),
        ];
        for message in &messages {
            let mut tokens = MessageTokens::new(message);
            assert_eq!(tokens.cached_exact(), None);
            let exact = tokens.exact(message);
            assert!(exact >= MESSAGE_OVERHEAD);
            assert!(exact <= tokens.upper());
            assert_eq!(tokens.cached_exact(), Some(exact));
        }
    }

    fn png(width: u32, height: u32, len: usize) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        bytes.extend_from_slice(&width.to_be_bytes());
        bytes.extend_from_slice(&height.to_be_bytes());
        bytes.resize(len.max(bytes.len()), 0x5A);
        bytes
    }

    #[test]
    fn parts_count_by_their_estimate_in_every_measure_never_as_base64_text() {
        use crate::context::part_tokens::part_tokens;
        use oxydra_types::ContentPart;
        // 1 MiB of image: 1.4 MB of base64, counted as 300 × 200 / 750 = 80 tokens.
        let image = ContentPart::image("image/png", &png(300, 200, 1024 * 1024));
        assert_eq!(part_tokens(&image), 80);
        let pdf = ContentPart::pdf(b"%PDF-1.4\n<< /Type /Page >>\n<< /Type /Page >>", None);
        let text = Message::tool_result(CallId::from("c"), "file_read", "Attached two files.");
        let with = text.clone().with_parts(vec![image.clone(), pdf.clone()]);
        let added = part_tokens(&image) + part_tokens(&pdf);
        let (mut plain, mut parts) = (MessageTokens::new(&text), MessageTokens::new(&with));
        assert_eq!(parts.upper(), plain.upper() + added);
        assert_eq!(parts.estimate(), plain.estimate() + added);
        assert_eq!(parts.exact(&with), plain.exact(&text) + added);
    }

    #[test]
    fn a_thousand_parts_in_one_message_count_by_their_price_not_their_bytes() {
        use crate::context::part_tokens::part_tokens;
        use oxydra_types::ContentPart;
        let parts: Vec<ContentPart> = (0..1_000u32)
            .map(|i| ContentPart::image("image/png", &png(750, 1 + i % 4, 4096)))
            .collect();
        let expected: u32 = parts.iter().map(part_tokens).sum();
        // 750 × h / 750 = h tokens: 1, 2, 3, 4 in turn.
        assert_eq!(expected, 250 * (1 + 2 + 3 + 4));
        let message = Message::user("many").with_parts(parts);
        let mut tokens = MessageTokens::new(&message);
        let exact = tokens.exact(&message);
        assert_eq!(tokens.estimate(), MESSAGE_OVERHEAD + 2 + expected);
        // The images' bytes never go through the text encoder (4 KiB of base64 each
        // would count in the thousands): the exact count is the parts' priced tokens
        // plus the text's, within the upper bound. (How fast is a bench's question,
        // crates/runtime/benches, never a wall clock in a test.)
        assert!(exact >= expected && exact <= tokens.upper());
        assert!(
            exact <= expected + MESSAGE_OVERHEAD + 8,
            "{exact} vs {expected}"
        );
    }

    #[test]
    fn the_estimate_mode_never_counts_exactly() {
        let message = Message::user("a".repeat(30));
        let mut tokens = MessageTokens::new(&message);
        assert_eq!(tokens.counted(&message, CountMode::Estimate), 14);
        assert_eq!(tokens.cached_exact(), None);
    }
}
