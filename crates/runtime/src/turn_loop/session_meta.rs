//! What a run sends as its system prompt, and what it records about its session (a
//! [`SessionMeta`]): the model, the system prompt, the agent name and the workspace.
//!
//! A runtime that keeps stored system prompts
//! ([`keep_session_system_prompt`](crate::AgentRuntimeBuilder::keep_session_system_prompt))
//! continues a session that has a meta with the meta's prompt and agent; otherwise the
//! runtime's own apply. The meta is written only when it changed.

use oxydra_memory::SessionMeta;
use oxydra_scrubbing::Scrubber;

/// What the runtime itself would run a session with.
pub(super) struct Own<'a> {
    pub model: &'a str,
    pub system_prompt: Option<&'a str>,
    pub agent: Option<&'a str>,
    /// The workspace the run works in.
    pub workspace: Option<&'a str>,
    /// A stored session keeps its recorded prompt and agent.
    pub keep_stored: bool,
}

/// A run's system prompt and the meta it records.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Profile {
    /// The system prompt the run sends.
    pub system_prompt: Option<String>,
    /// The meta to record once the session's first message of this run is stored;
    /// `None` when the stored meta says the same already.
    pub record: Option<SessionMeta>,
}

/// The profile of a run on a session recorded with `stored`. The recorded system prompt
/// is scrubbed: nothing unscrubbed is stored.
pub(super) fn resolve(own: &Own<'_>, stored: Option<&SessionMeta>, scrubber: &Scrubber) -> Profile {
    let (system_prompt, agent) = match stored.filter(|_| own.keep_stored) {
        Some(meta) => (meta.system_prompt.clone(), meta.agent.clone()),
        None => (
            own.system_prompt.map(str::to_owned),
            own.agent.map(str::to_owned),
        ),
    };
    let recorded_prompt = system_prompt
        .as_deref()
        .map(|prompt| scrubber.scrub(prompt).into_owned());
    let meta = SessionMeta {
        model: own.model.to_owned(),
        system_prompt: recorded_prompt,
        agent,
        workspace: own.workspace.map(str::to_owned),
        // A replay stays marked as one whatever runs it later.
        replay_of: stored.and_then(|meta| meta.replay_of.clone()),
    };
    let record = (stored != Some(&meta)).then_some(meta);
    Profile {
        system_prompt,
        record,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(keep_stored: bool) -> Own<'static> {
        Own {
            model: "model-b",
            system_prompt: Some("the runtime's prompt"),
            agent: None,
            workspace: Some("/work/project"),
            keep_stored,
        }
    }

    fn agent_meta() -> SessionMeta {
        SessionMeta {
            model: "model-a".into(),
            system_prompt: Some("You research questions.".into()),
            agent: Some("researcher".into()),
            workspace: Some("/work/project".into()),
            replay_of: None,
        }
    }

    #[test]
    fn a_new_session_runs_and_is_recorded_with_the_runtimes_own() {
        for keep in [false, true] {
            let profile = resolve(&own(keep), None, &Scrubber::new());
            assert_eq!(
                profile.system_prompt.as_deref(),
                Some("the runtime's prompt")
            );
            assert_eq!(
                profile.record,
                Some(SessionMeta {
                    model: "model-b".into(),
                    system_prompt: Some("the runtime's prompt".into()),
                    agent: None,
                    workspace: Some("/work/project".into()),
                    replay_of: None,
                })
            );
        }
    }

    #[test]
    fn a_stored_session_keeps_its_prompt_and_agent_only_when_asked() {
        let stored = agent_meta();
        let kept = resolve(&own(true), Some(&stored), &Scrubber::new());
        assert_eq!(
            kept.system_prompt.as_deref(),
            Some("You research questions.")
        );
        // The model is this run's; prompt and agent stay.
        assert_eq!(
            kept.record,
            Some(SessionMeta {
                model: "model-b".into(),
                ..agent_meta()
            })
        );
        let replaced = resolve(&own(false), Some(&stored), &Scrubber::new());
        assert_eq!(
            replaced.system_prompt.as_deref(),
            Some("the runtime's prompt")
        );
        assert_eq!(replaced.record.and_then(|m| m.agent), None);
    }

    #[test]
    fn a_run_in_another_workspace_records_it() {
        let stored = SessionMeta {
            model: "model-b".into(),
            workspace: Some("/elsewhere".into()),
            ..agent_meta()
        };
        let profile = resolve(&own(true), Some(&stored), &Scrubber::new());
        assert_eq!(
            profile.record.and_then(|meta| meta.workspace).as_deref(),
            Some("/work/project")
        );
    }

    #[test]
    fn a_replay_stays_marked_whatever_runs_it_later() {
        let stored = SessionMeta {
            replay_of: Some("ses_original".into()),
            ..agent_meta()
        };
        for keep in [false, true] {
            let profile = resolve(&own(keep), Some(&stored), &Scrubber::new());
            assert_eq!(
                profile.record.and_then(|meta| meta.replay_of).as_deref(),
                Some("ses_original")
            );
        }
    }

    #[test]
    fn a_kept_meta_without_a_prompt_sends_none() {
        let stored = SessionMeta {
            system_prompt: None,
            ..agent_meta()
        };
        let profile = resolve(&own(true), Some(&stored), &Scrubber::new());
        assert_eq!(profile.system_prompt, None);
    }

    #[test]
    fn an_unchanged_meta_is_not_written_again() {
        let stored = SessionMeta {
            model: "model-b".into(),
            ..agent_meta()
        };
        let profile = resolve(&own(true), Some(&stored), &Scrubber::new());
        assert_eq!(profile.record, None);
    }

    #[test]
    fn a_secret_in_the_prompt_is_sent_but_never_recorded() {
        let secret = "Use api_key=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD to call it.";
        let own = Own {
            system_prompt: Some(secret),
            ..own(false)
        };
        let profile = resolve(&own, None, &Scrubber::new());
        assert_eq!(profile.system_prompt.as_deref(), Some(secret));
        let recorded = profile.record.and_then(|m| m.system_prompt).unwrap();
        assert!(!recorded.contains("abcdefghijklmnop"), "{recorded}");
        assert!(recorded.starts_with("Use "), "{recorded}");
    }
}
