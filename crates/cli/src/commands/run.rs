//! `oxydra run [OPTIONS] <PROMPT>`: one task, exits when the agent yields.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use oxydra::runtime::{OutputSchema, RuntimeError};
use oxydra::serde_json;
use oxydra::types::{MessageRole, SessionId, Source};

use crate::args::{OutputFormat, RunArgs, RunOptions};
use crate::attachment::{self, MAX_ATTACHMENTS};
use crate::commands::run_prompt::prompt_text;
use crate::config::{self, Effective};
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::interrupt::Interrupts;

use crate::output::Renderer;
use crate::output::parts::Attached;
use crate::setup::database::MemoryStore;
use crate::terminal_input::TerminalInput;

use crate::setup::agent;

/// Loads, merges and checks the configuration of `run` / `chat`.
pub fn effective(options: &RunOptions) -> Result<Effective, CliError> {
    let (file, warnings) = config::load_quietly(options.config.as_deref())?;
    let env = |name: &str| std::env::var(name).ok();
    let merged = config::merge(&file, options, &env, std::io::stdin().is_terminal());
    // Refused for an untrusted file's provider: the error names the file, the keys and
    // the way out; the warning would say it all a second time.
    if !matches!(merged, Err(CliError::UntrustedProvider { .. })) {
        config::print_warnings(&warnings);
    }
    merged
}

/// Runs `oxydra run`.
pub async fn run(args: RunArgs) -> Result<Exit, CliError> {
    if args.print_config {
        return print_config(&args.options);
    }
    let effective = effective(&args.options)?;
    effective.require_known_price(&args.options)?;
    let output = match &args.output_schema {
        Some(path) => Some(output_schema(path)?),
        None => None,
    };
    let prompt = prompt_text(args.prompt.as_deref())?;
    // Read before anything starts: a bad file sends and stores nothing.
    let attached = image_parts(&args.image)?;
    // Where the message's text and parts came from beside the person: piped text,
    // then the files attached (a PDF's text can carry instructions as a page can).
    let mut sources = prompt.sources;
    if !attached.is_empty() {
        sources.push(Source::Workspace);
    }
    let renderer = Arc::new(
        Renderer::for_format(args.options.output)
            .with_workspace(effective.workspace.clone())
            .with_cost_unknown(!effective.price_known())
            .with_model(&effective.provider.model),
    );
    if args.options.output == OutputFormat::Text {
        eprintln!("{}", crate::output::header_line("run", &effective));
    }
    let interrupts = Interrupts::install();
    let input = TerminalInput::stdin();
    let agent = agent::build(&effective, Arc::clone(&renderer), &interrupts, input, false).await?;
    let session =
        agent::starting_session(&agent.memory, &effective, args.options.continue_latest).await?;
    tracing::debug!(session = %session, model = %effective.provider.model, "starting run");
    renderer.attached(&attached);
    let parts = attached.into_iter().map(|one| one.part);
    let cancel = interrupts.begin_turn();
    let mut request = agent
        .runtime
        .session(&session)
        .prompt(prompt.text)
        .parts(parts)
        .cancel(&cancel);
    for source in sources {
        request = request.prompt_source(source);
    }
    if let Some(output) = output {
        request = request.structured(output);
    }
    let result = request.await;
    interrupts.end_turn();
    renderer.finish();
    let fresh = effective.session.is_none() && !args.options.continue_latest;
    let kept = match &result {
        Err(error) if fresh && !matches!(error, RuntimeError::Cancelled) => {
            !discard_if_unanswered(agent.memory.as_ref(), &session).await
        }
        _ => true,
    };
    agent.stop().await;
    finish_task(&renderer, &session, kept, result.map(|_| ()))
}

/// Deletes a new session that a failed run left with nothing but the prompt (no
/// answer, no tool call), so that failures do not pile up empty sessions; returns
/// whether it did.
async fn discard_if_unanswered(memory: &dyn MemoryStore, session: &SessionId) -> bool {
    let Ok(messages) = memory.messages(session).await else {
        return false;
    };
    let unanswered = messages
        .iter()
        .all(|stored| stored.message.role == MessageRole::User);
    unanswered && memory.delete_session(session).await.is_ok()
}

/// `--print-config` of `run` and `chat`: the merged configuration, which needs no
/// provider yet (a missing one is said in a comment).
pub fn print_config(options: &RunOptions) -> Result<Exit, CliError> {
    let file = config::load(options.config.as_deref())?;
    let env = |name: &str| std::env::var(name).ok();
    let text = config::merge_for_print(&file, options, &env, std::io::stdin().is_terminal())?
        .to_masked_toml();
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)?;
    Ok(Exit::Done)
}

/// The exit of a finished task, making sure a closing event was printed.
pub fn finish_task(
    renderer: &Renderer,
    session: &SessionId,
    kept: bool,
    result: Result<(), RuntimeError>,
) -> Result<Exit, CliError> {
    match result {
        Ok(()) => crate::config::sandbox::refused_commands_exit(),
        Err(error) => {
            let kind = error.kind().to_owned();
            renderer.ensure_ended(&kind, &error.to_string());
            let message = crate::ended_early::ended_early(
                &error,
                crate::ended_early::Place::Run { session, kept },
            );
            Err(CliError::Run { kind, message })
        }
    }
}

/// The schema of `--output-schema FILE`; an unreadable file, bad JSON or a schema
/// that does not compile is an error naming the file.
fn output_schema(path: &Path) -> Result<OutputSchema, CliError> {
    let invalid = |message: String| CliError::OutputSchema {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|error| invalid(error.to_string()))?;
    let schema: serde_json::Value =
        serde_json::from_str(&text).map_err(|error| invalid(format!("invalid JSON: {error}")))?;
    OutputSchema::new(schema).map_err(|error| invalid(error.to_string()))
}

/// The parts of `--image FILE…`, in order; a missing file, one that is no image or
/// PDF by its bytes, one of a kind no provider takes, one over the size cap, or too
/// many files is an error naming the flag and the file.
fn image_parts(paths: &[PathBuf]) -> Result<Vec<Attached>, CliError> {
    if paths.len() > MAX_ATTACHMENTS {
        return Err(CliError::Flag {
            flag: "--image",
            message: format!(
                "{} files given, at most {MAX_ATTACHMENTS} may be attached",
                paths.len()
            ),
        });
    }
    paths
        .iter()
        .map(|path| -> Result<Attached, CliError> {
            let part = attachment::read_part(path).map_err(|problem| CliError::Flag {
                flag: "--image",
                message: format!("{}: {problem}", path.display()),
            })?;
            let file = path.file_name().unwrap_or(path.as_os_str());
            Ok(Attached {
                file: file.to_string_lossy().into_owned(),
                part,
            })
        })
        .collect()
}
