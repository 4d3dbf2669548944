//! The check before a run spends a call: can the new user message fit the context
//! budget at all, with the system prompt and the tool schemas sent with every request?

use std::time::Duration;

use oxydra_types::Message;
use tokio_util::sync::CancellationToken;

use super::budget::{ContextBudget, FixedTokens};
use super::off_thread::{count_off_thread, load_encoder_until_cancelled};
use super::part_tokens::parts_tokens;
use super::tokens::{MESSAGE_OVERHEAD, message_upper_bound};
use crate::error::RuntimeError;

/// What a new prompt is measured with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PromptFit<'a> {
    /// The system prompt, sent first with every request.
    pub system_prompt: Option<&'a str>,
    /// The tool schemas' cost, sent with every request.
    pub schema_tokens: &'a FixedTokens,
    /// The runtime's context budget.
    pub budget: ContextBudget,
}

impl PromptFit<'_> {
    /// `Ok` when `user` with the system prompt and the tool schemas fits the budget;
    /// [`RuntimeError::PromptTooLong`] with the count and the budget when it does not.
    ///
    /// When the byte upper bound fits, nothing is counted. Otherwise the encoder is
    /// loaded (under `cancel`) and the parts are counted exactly (each text bounded by
    /// its 64 KiB prefix) on blocking threads, under `cancel` and `timeout`.
    pub async fn check(
        &self,
        user: &Message,
        cancel: &CancellationToken,
        timeout: Duration,
    ) -> Result<(), RuntimeError> {
        let available = self.budget.available();
        let system = self.system_prompt.map(Message::system);
        let upper = self
            .schema_tokens
            .upper()
            .saturating_add(
                system
                    .as_ref()
                    .map_or(0, |m| u64::from(message_upper_bound(m))),
            )
            .saturating_add(u64::from(message_upper_bound(user)));
        if upper <= available {
            return Ok(());
        }
        load_encoder_until_cancelled(cancel)
            .await
            .map_err(|interrupted| interrupted.into_error(timeout))?;
        // Texts, not messages: the window counts its messages itself, this check
        // leaves its caches and its count of messages counted untouched.
        let mut texts = Vec::with_capacity(3);
        texts.extend(system.as_ref().map(|message| message.text().to_owned()));
        texts.push(user.text().to_owned());
        let message_count = texts.len();
        let schemas = self.schema_tokens.uncounted_text().map(str::to_owned);
        texts.extend(schemas);
        let counts = count_off_thread(Vec::new(), texts, cancel, timeout)
            .await
            .map_err(|interrupted| interrupted.into_error(timeout))?;
        let (messages, schemas) = counts.texts.split_at(message_count.min(counts.texts.len()));
        if let Some(exact) = schemas.first() {
            self.schema_tokens.seed_exact(u64::from(*exact));
        }
        let schema = self.schema_tokens.exact_if_counted().unwrap_or(0);
        // The user's parts (images, documents) count by their estimate, not as text.
        let parts = u64::from(parts_tokens(user));
        let total = messages
            .iter()
            .fold(schema.saturating_add(parts), |sum, count| {
                sum.saturating_add(u64::from(*count))
                    .saturating_add(u64::from(MESSAGE_OVERHEAD))
            });
        if total <= available {
            return Ok(());
        }
        Err(RuntimeError::PromptTooLong {
            tokens: total,
            budget: available,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::tokens;

    fn fit(schemas: &FixedTokens, window: u32) -> PromptFit<'_> {
        PromptFit {
            system_prompt: Some("be brief"),
            schema_tokens: schemas,
            budget: ContextBudget {
                context_window: window,
                output_reserve: 100,
                safety_buffer: 0,
            },
        }
    }

    #[tokio::test]
    async fn a_prompt_within_the_byte_bound_is_not_counted() {
        let schemas = FixedTokens::new("{}".into());
        let before = tokens::messages_counted_on_this_thread();
        fit(&schemas, 1_000)
            .check(
                &Message::user("hello"),
                &CancellationToken::new(),
                Duration::from_secs(60),
            )
            .await
            .unwrap();
        assert_eq!(tokens::messages_counted_on_this_thread(), before);
        assert!(schemas.uncounted_text().is_some());
    }

    #[tokio::test]
    async fn a_prompt_whose_bytes_pass_but_whose_tokens_fit_is_accepted() {
        // 600 bytes of one repeated word: far fewer tokens than bytes.
        let schemas = FixedTokens::new("{}".into());
        let user = Message::user("hello ".repeat(100));
        fit(&schemas, 500)
            .check(&user, &CancellationToken::new(), Duration::from_secs(60))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_megabyte_prompt_is_refused_with_its_count_and_the_budget() {
        let schemas = FixedTokens::new("{\"name\":\"read_file\"}".into());
        let user = Message::user("lorem ipsum dolor sit amet ".repeat(40_000));
        let error = fit(&schemas, 8_000)
            .check(&user, &CancellationToken::new(), Duration::from_secs(60))
            .await
            .unwrap_err();
        let RuntimeError::PromptTooLong { tokens, budget } = error else {
            panic!("{error:?}");
        };
        assert_eq!(budget, 7_900);
        assert!(tokens > 100_000, "{tokens}");
    }

    #[tokio::test]
    async fn the_system_prompt_and_schemas_count_against_the_budget() {
        // The user message alone fits; with a large schema it no longer does.
        let schemas = FixedTokens::new("tool schema words ".repeat(2_000));
        let user = Message::user("hello");
        let error = fit(&schemas, 1_000)
            .check(&user, &CancellationToken::new(), Duration::from_secs(60))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), "prompt_too_long");
    }

    #[tokio::test]
    async fn a_check_out_of_time_ends_with_the_turn_timeout() {
        // The encoder loads whatever the time; the counts are not ready in none.
        let schemas = FixedTokens::default();
        let user = Message::user("lorem ipsum dolor sit amet ".repeat(40_000));
        let error = fit(&schemas, 1_000)
            .check(&user, &CancellationToken::new(), Duration::ZERO)
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "budget `turn_timeout` exceeded: counting the prompt's tokens did not finish \
             within 0 ms"
        );
    }

    #[tokio::test]
    async fn a_cancelled_check_ends_as_cancelled() {
        let schemas = FixedTokens::default();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let user = Message::user("x".repeat(100_000));
        let error = fit(&schemas, 1_000)
            .check(&user, &cancel, Duration::from_secs(60))
            .await
            .unwrap_err();
        assert!(matches!(error, RuntimeError::Cancelled), "{error:?}");
    }
}
