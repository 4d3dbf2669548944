//! The production agent of the library guide ("A production agent"): a `#[tool]` of its
//! own that changes things (consent asked once per session), the built-in `file_read`
//! alone, SQLite memory opened off the async threads, a cost budget with the model's
//! price, a permission broker that defers consent to a person, streamed events and a
//! typed answer. The first run ends waiting for approval; the decision (here from the
//! command line, in a service from a person, perhaps hours later) resumes it to the
//! typed value, under the same budget.
//!
//! `OPENAI_API_KEY=… cargo run --example production_agent -- WORKSPACE DB [approve|deny]`

use std::sync::Arc;
use std::time::Duration;

use oxydra::executor::{PermissionBroker, PermissionDecision, PermissionRequest};
use oxydra::memory::{SqliteConfig, SqliteMemory};
use oxydra::provider::ModelPrice;
use oxydra::runtime::{
    AgentRuntime, ApprovalDecision, RunOutcome, RuntimeLimits, TypedOutcome, TypedRunRequest,
};
use oxydra::schemars::JsonSchema;
use oxydra::serde::Deserialize;
use oxydra::tools::{BuiltinToolsConfig, ToolContext, ToolError, ToolRegistry};
use oxydra::types::{RuntimeEvent, SessionId};
use oxydra::{async_trait, tool};

/// Publishes a release note: writes it to `notes/<slug>.md` in the workspace.
#[tool(side_effecting, consent = "session")]
async fn publish_note(
    /// A short file name, without extension (`v0-2`).
    slug: String,
    /// The note, in Markdown.
    text: String,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let file = format!("notes/{slug}.md");
    // The model chose `slug`: `ctx.resolve` refuses `../..` and paths leading out.
    let path = ctx.resolve(&file)?;
    let io = |action: &'static str, file: &str| {
        let path = file.to_owned();
        move |source| ToolError::Io {
            action,
            path,
            source,
        }
    };
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(io("creating the notes directory", &file))?;
    }
    tokio::fs::write(&path, text)
        .await
        .map_err(io("writing the note", &file))?;
    Ok(format!("published {file}"))
}

/// What the model answers with, once done.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(crate = "oxydra::serde")]
#[schemars(crate = "oxydra::schemars")]
struct Release {
    /// The version released.
    version: String,
    /// Whether the note was published.
    published: bool,
}

/// Nobody watches the agent as it works: consent waits for a person, for a day.
struct AskAPerson;

#[async_trait]
impl PermissionBroker for AskAPerson {
    async fn request(&self, _request: PermissionRequest) -> PermissionDecision {
        PermissionDecision::Defer(Duration::from_secs(24 * 3600))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [workspace, db, rest @ ..] = args.as_slice() else {
        return Err("usage: production_agent WORKSPACE DB [approve|deny]".into());
    };
    let approve = rest.first().is_none_or(|answer| answer == "approve");

    let memory = Arc::new(SqliteMemory::open_async(db, SqliteConfig::default()).await?);
    let agent = AgentRuntime::builder()
        // A model the built-in price table does not know: its price is given, or
        // `build()` refuses the cost budget (`RuntimeError::UnpricedModel`).
        .provider_from_env("openai", "acme-large-2")
        .model_price(ModelPrice::new(0.40, 1.60, 0.10))
        .limits(limits())
        .system_prompt("You prepare release notes from the changelog.")
        .workspace_root(workspace)
        .tools(ToolRegistry::with_builtin_subset(
            &BuiltinToolsConfig::default(),
            &["file_read"],
        )?)
        .tool(PublishNote)
        .permission_broker(Arc::new(AskAPerson))
        .memory(memory)
        .build()?;

    let session = SessionId::generate();
    let request = agent
        .session(&session)
        .prompt("Publish a release note for the newest version in CHANGELOG.md.");
    let pending = match stream(request.output::<Release>()).await? {
        RunOutcome::AwaitingApproval(pending) => pending,
        RunOutcome::Finished((release, _)) => return report(&release),
        other => return Err(format!("unexpected outcome: {other:?}").into()),
    };
    // A service stores `pending` (it is `Serialize`) where people look; the runtime
    // lists it too, without resuming anything.
    for waiting in agent.pending_approvals(&session).await? {
        eprintln!("waiting: `{}` with {}", waiting.tool, waiting.arguments);
    }
    let mut resume = agent.session(&session);
    for approval in pending {
        resume = resume.decide(approval, decision(approve));
    }
    match stream(resume.output::<Release>()).await? {
        RunOutcome::Finished((release, outcome)) => {
            eprintln!("{} turns, ${:.6} in all", outcome.turns, outcome.cost);
            report(&release)
        }
        other => Err(format!("the resumed run did not finish: {other:?}").into()),
    }
}

/// The run's budgets: six model calls and five US cents, resumes included. Fields set
/// one by one: `RuntimeLimits` grows, and a struct literal of it would not build once
/// it is `#[non_exhaustive]`.
#[allow(clippy::field_reassign_with_default)]
fn limits() -> RuntimeLimits {
    let mut limits = RuntimeLimits::default();
    limits.max_turns = 6;
    limits.max_cost = Some(0.05);
    limits
}

/// Streams a typed run's events to stderr as they happen; its outcome.
async fn stream(
    request: TypedRunRequest<Release>,
) -> Result<TypedOutcome<Release>, Box<dyn std::error::Error>> {
    let (mut events, handle) = request.stream();
    while let Some(event) = events.recv().await {
        match event {
            RuntimeEvent::ToolStarted { name, .. } => eprintln!("[{name} …]"),
            RuntimeEvent::ToolCompleted { name, .. } => eprintln!("[{name} done]"),
            RuntimeEvent::ToolFailed { name, error, .. } => eprintln!("[{name} failed: {error}]"),
            RuntimeEvent::ApprovalRequested { name, .. } => {
                eprintln!("[{name} waits for approval]")
            }
            _ => {} // RuntimeEvent is #[non_exhaustive]
        }
    }
    Ok(handle.await?)
}

/// What the person decided, for one waiting call.
fn decision(approve: bool) -> ApprovalDecision {
    if approve {
        ApprovalDecision::ApproveOnce
    } else {
        ApprovalDecision::Deny {
            reason: Some("not before the release review".into()),
        }
    }
}

fn report(release: &Release) -> Result<(), Box<dyn std::error::Error>> {
    println!("{}: published {}", release.version, release.published);
    Ok(())
}
