//! The `before_model_request` hooks: each request the turn loop is about to send is
//! shown to them (a copy: what they change applies to this request only, never to the
//! stored session), and any of them may stop the run.

use oxydra_executor::{HookChain, ModelRequestEdit};
use oxydra_provider::ProviderRequest;
use oxydra_types::SessionId;
use tokio_util::sync::CancellationToken;

use crate::error::RuntimeError;
use crate::events::RunEvents;

/// Where a request is being sent.
pub(crate) struct RequestSite<'a> {
    pub session_id: &'a SessionId,
    pub turn: usize,
    pub cancel: &'a CancellationToken,
    pub events: &'a RunEvents,
}

/// `request` as the hooks leave it: `None` without hooks (send it as it is), else the
/// changed copy; a hook's stop is [`RuntimeError::HookStopped`].
pub(crate) async fn apply(
    hooks: &HookChain,
    request: &ProviderRequest,
    site: RequestSite<'_>,
) -> Result<Option<ProviderRequest>, RuntimeError> {
    if hooks.is_empty() {
        return Ok(None);
    }
    let mut edit = ModelRequestEdit {
        session_id: site.session_id.clone(),
        turn: site.turn,
        model: request.model.clone(),
        messages: request.messages.clone(),
        tools: request.tools.clone(),
    };
    let decided = tokio::select! {
        biased;
        () = site.cancel.cancelled() => return Err(RuntimeError::Cancelled),
        decided = hooks.before_model_request(&mut edit, site.cancel, site.events) => decided,
    };
    decided.map_err(|stop| RuntimeError::HookStopped {
        hook: stop.hook,
        reason: stop.reason,
    })?;
    let mut changed = request.clone();
    changed.messages = edit.messages;
    changed.tools = edit.tools;
    Ok(Some(changed))
}
