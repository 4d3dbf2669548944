//! Preparing a call (lookup, validation, dedupe key) and admitting it (dedupe, rules,
//! cooldown, consent) before it may run.

use std::sync::Arc;
use std::time::Instant;

use oxydra_tools::{Tool, ToolOutput};
use oxydra_types::{SafetyTier, ToolCall};

use crate::consent::{ConsentCheck, GrantLookup, PermissionRequest};
use crate::context::ExecutionContext;
use crate::dedupe::canonical_key;
use crate::error::ToolExecutionError;
use crate::executor::ToolExecutor;
use crate::permission_scope::PermissionScope;
use crate::rules::DedupePolicy;
use crate::rules::process_state::ProcessToolState;

/// How dedupe treats a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DedupeMode {
    /// Not deduped.
    Off,
    /// A read-only call: a duplicate reuses the earlier output.
    Reuse,
    /// An opted-in side-effecting call: a duplicate is refused.
    Refuse,
}

/// A call whose tool exists and whose arguments passed the guard.
pub(crate) struct Prepared {
    pub(crate) tool: Arc<dyn Tool>,
    pub(crate) tier: SafetyTier,
    pub(crate) args: serde_json::Value,
    pub(crate) heartbeat: bool,
    /// The canonical dedupe key; empty when neither dedupe nor consent needs it.
    pub(crate) key: String,
    pub(crate) dedupe: DedupeMode,
}

/// What an admitted call holds of the rule state until it has run (the rules record
/// `max_calls` counts and cooldown stamps after execution; they are reserved at
/// admission so that concurrent calls cannot both pass a limit, and given back by
/// [`ToolExecutor::release`] if the call fails).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Reservation {
    /// A `max_calls` slot was taken in the session run.
    pub(crate) counted: bool,
    /// The cooldown clock was stamped with `stamp`; `previous` is what it held before.
    pub(crate) cooldown: Option<CooldownStamp>,
}

/// A cooldown stamp taken at admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CooldownStamp {
    pub(crate) stamp: Instant,
    pub(crate) previous: Option<Instant>,
}

/// What admission decided.
pub(crate) enum Admission {
    /// Run it, holding this reservation.
    Run(Reservation),
    /// Do not run it; reuse this earlier output.
    Reused(ToolOutput),
    /// Do not run it.
    Refused(ToolExecutionError),
}

impl ToolExecutor {
    /// Look the tool up and check the arguments. On failure, the tier when the tool exists.
    pub(crate) fn prepare(
        &self,
        call: &ToolCall,
    ) -> Result<Prepared, (Option<SafetyTier>, ToolExecutionError)> {
        let Some(tool) = self.tools.get(&call.name) else {
            return Err((
                None,
                ToolExecutionError::NotFound {
                    tool_name: call.name.clone(),
                    available: self.tools.names(),
                },
            ));
        };
        let tier = tool.safety_tier();
        let checked = self
            .schemas
            .check(call, tool.as_ref())
            .map_err(|error| (Some(tier), error))?;
        let rules = self.rules.for_tool(&call.name);
        let dedupe = match (rules.dedupe, tier) {
            (DedupePolicy::Never, _) => DedupeMode::Off,
            (_, SafetyTier::ReadOnly) => DedupeMode::Reuse,
            (DedupePolicy::OptIn, _) => DedupeMode::Refuse,
            (DedupePolicy::ByTier, _) => DedupeMode::Off,
        };
        // The key serves dedupe and argument-scoped consent grants; skip it otherwise.
        let needs_key =
            dedupe != DedupeMode::Off || rules.consent.is_some() || tier == SafetyTier::Privileged;
        Ok(Prepared {
            key: if needs_key {
                canonical_key(&call.name, &checked.args)
            } else {
                String::new()
            },
            tool,
            tier,
            args: checked.args,
            heartbeat: checked.heartbeat,
            dedupe,
        })
    }

    /// Decide whether `call` may run now, reserving its rule counters when it may
    /// (see [`Reservation`]).
    pub(crate) async fn admit(
        &self,
        call: &ToolCall,
        prepared: &Prepared,
        process: &ProcessToolState,
        ctx: &ExecutionContext,
        bypass_start: bool,
    ) -> Admission {
        if ctx.cancel.is_cancelled() {
            return Admission::Refused(ToolExecutionError::Cancelled);
        }
        let window = self.config.dedupe_window;
        let now = Instant::now();
        match prepared.dedupe {
            DedupeMode::Reuse => {
                if let Some(output) =
                    self.dedupe
                        .cached_read(&ctx.session_id, &prepared.key, window, now)
                {
                    return Admission::Reused(output);
                }
            }
            DedupeMode::Refuse => {
                if let Some(age) =
                    self.dedupe
                        .effect_age(&ctx.session_id, &prepared.key, window, now)
                {
                    return Admission::Refused(ToolExecutionError::Deduplicated {
                        tool_name: call.name.clone(),
                        age,
                        window,
                    });
                }
            }
            DedupeMode::Off => {}
        }
        let rules = self.rules.for_tool(&call.name);
        let last_run = match rules.cooldown {
            Some(_) => self.last_run.get(&call.name).map(|at| *at.value()),
            None => None,
        };
        let checked = if rules.has_run_rules() {
            self.runs.read(ctx.session_run, |run| {
                self.rules
                    .check(&call.name, process, run, last_run, now, bypass_start)
            })
        } else {
            self.rules
                .check(&call.name, process, None, last_run, now, bypass_start)
        };
        if let Err(violation) = checked {
            return Admission::Refused(ToolExecutionError::RuleViolation(violation));
        }
        // Read-only calls are never held; a side-effecting or privileged one is when
        // the session has read a source the policy names for the tool.
        let hold = match prepared.tier {
            SafetyTier::ReadOnly => None,
            SafetyTier::SideEffecting | SafetyTier::Privileged => self
                .provenance
                .hold_for(&call.name, &ctx.provenance.sources()),
        };
        let hold_reason = hold.as_ref().map(crate::ProvenanceHold::reason);
        let consent = match (rules.consent, prepared.tier, hold_reason.as_deref()) {
            (Some(scope), _, None) => Some((scope, "the tool has a requires_consent rule")),
            (Some(scope), _, Some(held)) => Some((scope, held)),
            (None, _, Some(held)) => Some((PermissionScope::Session, held)),
            (None, SafetyTier::Privileged, None) if self.config.require_permissions => {
                Some((PermissionScope::Session, "the tool is privileged"))
            }
            _ => None,
        };
        if let Some((scope, reason)) = consent {
            let check = ConsentCheck {
                broker: self.broker.as_ref(),
                grants: &self.grants,
                verdicts: &self.verdicts,
                timeout: self.config.permission_timeout,
                cancel: &ctx.cancel,
                clock: &ctx.consent_clock,
                provenance: &ctx.provenance,
            };
            let lookup = GrantLookup {
                tool_name: &call.name,
                scope,
                session_id: &ctx.session_id,
                call_id: &call.id,
                args_key: &prepared.key,
                hold: hold.as_ref(),
                reason,
            };
            // The request (with a copy of the arguments) is built only if the broker is asked.
            let request = || PermissionRequest {
                tool_name: call.name.clone(),
                arguments: prepared.args.clone(),
                tier: prepared.tier,
                scope,
                session_id: ctx.session_id.clone(),
                call_id: call.id.clone(),
                reason: reason.to_owned(),
                preview: prepared.tool.preview(&prepared.args, &ctx.workspace_root),
                provenance: hold.clone(),
            };
            if let Err(error) = check.authorize(lookup, request).await {
                return Admission::Refused(error);
            }
        }
        let mut reservation = Reservation::default();
        if rules.has_run_rules() {
            self.runs.update(ctx.session_run, |run| {
                reservation.counted = self.rules.commit(&call.name, run);
            });
        }
        if rules.cooldown.is_some() {
            let stamp = Instant::now();
            let previous = self.last_run.insert(call.name.clone(), stamp);
            reservation.cooldown = Some(CooldownStamp { stamp, previous });
        }
        if prepared.tier != SafetyTier::ReadOnly {
            // The world may change: earlier reads of this session are no longer reusable.
            self.dedupe.clear_reads(&ctx.session_id);
        }
        Admission::Run(reservation)
    }

    /// Give back what a call that ran but failed (tool error, timeout, panic,
    /// cancellation) reserved: its `max_calls` slot, and its cooldown stamp unless a
    /// later call has stamped the clock since.
    pub(crate) fn release(
        &self,
        ctx: &ExecutionContext,
        tool_name: &str,
        reservation: Reservation,
    ) {
        if reservation.counted {
            self.runs
                .update(ctx.session_run, |run| self.rules.uncount(tool_name, run));
        }
        if let Some(CooldownStamp { stamp, previous }) = reservation.cooldown
            && let dashmap::Entry::Occupied(mut entry) = self.last_run.entry(tool_name.to_owned())
            && *entry.get() == stamp
        {
            match previous {
                Some(previous) => {
                    entry.insert(previous);
                }
                None => {
                    entry.remove();
                }
            }
        }
    }

    /// Confirm what a call that ran successfully reserved: its cooldown starts now,
    /// when it finished (`last_execution` is stamped after execution).
    pub(crate) fn confirm(&self, tool_name: &str, reservation: Reservation, finished: Instant) {
        if reservation.cooldown.is_some() {
            self.last_run
                .entry(tool_name.to_owned())
                .and_modify(|at| *at = (*at).max(finished))
                .or_insert(finished);
        }
    }
}
