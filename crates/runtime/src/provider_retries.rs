//! How the builder makes the provider retry: wrapped once in a [`ReliableProvider`]
//! with the default or a given [`RetryPolicy`], or used as given.

use std::sync::Arc;

use oxydra_provider::{Provider, ReliableProvider, RetryPolicy};

/// How the builder makes the provider retry.
#[derive(Debug, Default)]
pub(crate) enum Retries {
    /// Wrapped in a [`ReliableProvider`] with the default [`RetryPolicy`], unless it
    /// already is one (which keeps its own policy).
    #[default]
    Default,
    /// Wrapped in a [`ReliableProvider`] with this policy (one that is already a
    /// `ReliableProvider` gets its inner provider re-wrapped).
    Policy(RetryPolicy),
    /// Used as given.
    Off,
}

/// `provider` made to retry as `retries` says, never wrapped twice.
pub(crate) fn with_retries(provider: Arc<dyn Provider>, retries: Retries) -> Arc<dyn Provider> {
    match retries {
        Retries::Default => ReliableProvider::wrap(provider, RetryPolicy::default()),
        // Its fallback models kept.
        Retries::Policy(policy) => match ReliableProvider::downcast(provider.as_ref()) {
            Some(reliable) => Arc::new(reliable.with_policy(policy)),
            None => Arc::new(ReliableProvider::new(provider, policy)),
        },
        Retries::Off => provider,
    }
}

#[cfg(test)]
mod tests {
    use oxydra_provider::ScriptedProvider;

    use super::*;

    fn plain() -> Arc<dyn Provider> {
        Arc::new(ScriptedProvider::new(vec![]))
    }

    fn policy_of(provider: &Arc<dyn Provider>) -> Option<RetryPolicy> {
        ReliableProvider::downcast(provider.as_ref()).map(|r| r.policy().clone())
    }

    #[test]
    fn a_provider_gets_the_default_policy_unless_told_otherwise() {
        let provider = plain();
        let wrapped = with_retries(Arc::clone(&provider), Retries::Default);
        assert_eq!(policy_of(&wrapped), Some(RetryPolicy::default()));
        let kept = with_retries(Arc::clone(&provider), Retries::Off);
        assert!(Arc::ptr_eq(&kept, &provider));
        let custom = RetryPolicy::default().with_max_attempts(2);
        let chosen = with_retries(provider, Retries::Policy(custom.clone()));
        assert_eq!(policy_of(&chosen), Some(custom));
    }

    #[test]
    fn a_reliable_provider_is_never_wrapped_twice() {
        let inner = plain();
        let custom = RetryPolicy::default().with_max_attempts(2);
        let reliable: Arc<dyn Provider> =
            Arc::new(ReliableProvider::new(Arc::clone(&inner), custom.clone()));
        let default = with_retries(Arc::clone(&reliable), Retries::Default);
        assert!(Arc::ptr_eq(&default, &reliable));
        assert_eq!(policy_of(&default), Some(custom));
        // An explicit policy replaces the wrapper's, around the same inner provider.
        let other = RetryPolicy::default().with_max_attempts(5);
        let replaced = with_retries(reliable, Retries::Policy(other.clone()));
        assert_eq!(policy_of(&replaced), Some(other));
        let replaced = ReliableProvider::downcast(replaced.as_ref()).unwrap();
        assert!(Arc::ptr_eq(replaced.inner(), &inner));
    }

    #[test]
    fn a_new_policy_keeps_the_fallback_models() {
        let reliable = ReliableProvider::new(plain(), RetryPolicy::default())
            .with_fallback_model(plain(), "backup");
        let replaced = with_retries(
            Arc::new(reliable),
            Retries::Policy(RetryPolicy::default().with_max_attempts(1)),
        );
        let replaced = ReliableProvider::downcast(replaced.as_ref()).unwrap();
        assert_eq!(replaced.fallback_models(), ["backup"]);
    }
}
