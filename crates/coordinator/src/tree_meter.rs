//! The provider wrapper that charges every call of a run to its run tree and refuses
//! calls once the tree spent its root's `max_cost` ([`crate::run_tree`]).
//!
//! The coordinator wraps the providers of the [`RunnerDeps`](crate::RunnerDeps) it is
//! built from. A call made outside a run (no [`RunScope`](crate::run_tree::RunScope))
//! passes through untouched. The cost of a call is the built-in price of its model,
//! as the runtime computes a run's own cost.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use oxydra_provider::{
    Provider, ProviderCapabilities, ProviderError, ProviderRequest, ProviderResponse,
    ProviderStream, ReliableProvider,
};
use oxydra_types::StreamItem;
use tokio_util::sync::CancellationToken;

use crate::run_tree;

/// `provider`, metered. A [`ReliableProvider`] stays outermost (with its policy), so
/// the runtime still finds it and retries are not doubled.
pub(crate) fn metered(provider: Arc<dyn Provider>) -> Arc<dyn Provider> {
    match ReliableProvider::downcast(provider.as_ref()) {
        Some(reliable) => Arc::new(ReliableProvider::new(
            Arc::new(TreeMeter {
                inner: Arc::clone(reliable.inner()),
            }),
            reliable.policy().clone(),
        )),
        None => Arc::new(TreeMeter { inner: provider }),
    }
}

/// Charges each call to the run tree of the run making it.
struct TreeMeter {
    inner: Arc<dyn Provider>,
}

/// The error of a call refused by the tree's budget: final, never retried.
fn refused(message: String) -> ProviderError {
    ProviderError::RetryAdvised {
        retry: false,
        error: Box::new(ProviderError::InvalidRequest { message }),
    }
}

#[async_trait]
impl Provider for TreeMeter {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn capabilities(&self, model: &str) -> ProviderCapabilities {
        self.inner.capabilities(model)
    }

    fn is_small_model(&self) -> bool {
        self.inner.is_small_model()
    }

    fn for_workspace(&self, workspace: &std::path::Path) -> Option<Arc<dyn Provider>> {
        let inner = self.inner.for_workspace(workspace)?;
        Some(Arc::new(TreeMeter { inner }))
    }

    fn opening_tool_choice(
        &self,
        messages: &[oxydra_types::Message],
    ) -> Option<oxydra_provider::ToolChoice> {
        self.inner.opening_tool_choice(messages)
    }

    async fn complete(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderResponse, ProviderError> {
        let scope = run_tree::current();
        if let Some(scope) = &scope {
            scope.check_budget().await.map_err(refused)?;
        }
        let response = self.inner.complete(request, cancel).await?;
        if let Some(scope) = &scope {
            scope
                .charge(oxydra_provider::cost(&request.model, &response.usage))
                .await;
        }
        Ok(response)
    }

    async fn stream(
        &self,
        request: &ProviderRequest,
        cancel: &CancellationToken,
    ) -> Result<ProviderStream, ProviderError> {
        let Some(scope) = run_tree::current() else {
            return self.inner.stream(request, cancel).await;
        };
        scope.check_budget().await.map_err(refused)?;
        let stream = self.inner.stream(request, cancel).await?;
        let model = request.model.clone();
        Ok(Box::pin(stream.then(move |item| {
            let scope = Arc::clone(&scope);
            let model = model.clone();
            async move {
                if let Ok(StreamItem::Usage(usage)) = &item {
                    scope.charge(oxydra_provider::cost(&model, usage)).await;
                }
                item
            }
        })))
    }
}
