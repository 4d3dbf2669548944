//! `oxydra replay SESSION [--from N] [--live]`: a stored session's prompts run again
//! against a model (DESIGN.md §3.15). Recorded outputs answer matching calls; others
//! are refused, or with `--live` run in a scratch copy of the workspace. The tools
//! always work in a scratch directory (empty unless live), so neither the workspace
//! nor the original session changes; the replay is a new session.

use std::path::Path;
use std::sync::Arc;

use oxydra::memory::Memory;
use oxydra::runtime::replay::{Replay, ReplayError};

use crate::args::ReplayArgs;
use crate::config::ApproveMode;
use crate::error::CliError;
use crate::exit_code::Exit;
use crate::interrupt::Interrupts;
use crate::output::Renderer;
use crate::setup::agent::{self, ReplaySetup};
use crate::setup::database::{memory_error, open_with};
use crate::setup::session_id::stored_session;
use crate::terminal_input::TerminalInput;

/// Runs `oxydra replay`.
pub async fn run(args: ReplayArgs) -> Result<Exit, CliError> {
    check_flags(&args)?;
    let mut effective = super::run::effective(&args.options)?;
    let db = effective.memory.db.clone();
    let store = open_with(
        &db,
        &effective.memory.origin,
        effective.memory.store_options(),
    )
    .await?;
    let original = stored_session(store.as_ref(), &db, &args.replayed).await?;
    let memory: &dyn Memory = store.as_ref();
    let replay = Replay::load(memory, &original, args.from)
        .await
        .map_err(|error| match error {
            ReplayError::NoTurn { .. } => CliError::Flag {
                flag: "--from",
                message: error.to_string(),
            },
            other => memory_error(&db, other),
        })?;
    drop(store);
    let scratch = scratch_workspace(&effective.workspace, args.live).await?;
    let workspace = std::mem::replace(&mut effective.workspace, scratch.path().to_path_buf());
    if !args.live {
        // Nothing runs: a recorded output needs no consent.
        effective.runtime.approve = Some(ApproveMode::Allow);
    }
    let renderer = Arc::new(
        Renderer::for_format(args.options.output)
            .with_workspace(effective.workspace.clone())
            .with_cost_unknown(!effective.price_known()),
    );
    let interrupts = Interrupts::install();
    let setup = ReplaySetup {
        replay: &replay,
        live: args.live,
        instructions_from: workspace,
    };
    let agent = agent::build_with(
        &effective,
        Arc::clone(&renderer),
        &interrupts,
        TerminalInput::stdin(),
        false,
        Some(setup),
    )
    .await?;
    let cancel = interrupts.begin_turn();
    let memory: &dyn Memory = agent.memory.as_ref();
    let result = replay.run(&agent.runtime, memory, &cancel).await;
    interrupts.end_turn();
    renderer.finish();
    agent.stop().await;
    drop(scratch);
    match result {
        Ok(report) => {
            super::replay_report::print(&report, args.options.output)?;
            Ok(Exit::Done)
        }
        Err(error) => {
            let kind = error
                .run_error()
                .map_or("replay", |run| run.kind())
                .to_owned();
            renderer.ensure_ended(&kind, &error.to_string());
            Err(CliError::Run {
                kind,
                message: error.to_string(),
            })
        }
    }
}

/// Flags of `run` that mean nothing to a replay, and a turn 0.
fn check_flags(args: &ReplayArgs) -> Result<(), CliError> {
    let refused = |flag: &'static str, message: &str| CliError::Flag {
        flag,
        message: message.to_owned(),
    };
    if args.options.session.is_some() {
        return Err(refused(
            "--session",
            "a replay always stores a new session; name the session to replay as the argument",
        ));
    }
    if args.options.continue_latest {
        return Err(refused(
            "--continue",
            "a replay always stores a new session; name the session to replay as the argument",
        ));
    }
    if args.from == 0 {
        return Err(refused("--from", "turns count from 1"));
    }
    Ok(())
}

/// The directory the tools of the replay work in: empty, or with `live` a copy of
/// `workspace` (symbolic links copied as links, never followed). Removed on drop.
async fn scratch_workspace(workspace: &Path, live: bool) -> Result<tempfile::TempDir, CliError> {
    let setup = |error: std::io::Error| {
        CliError::Setup(format!(
            "cannot make the replay's scratch workspace: {error}"
        ))
    };
    let dir = tempfile::Builder::new()
        .prefix("oxydra-replay-")
        .tempdir()
        .map_err(setup)?;
    if live {
        let from = workspace.to_path_buf();
        let to = dir.path().to_path_buf();
        tokio::task::spawn_blocking(move || copy_tree(&from, &to, (&from, &to)))
            .await
            .map_err(|error| setup(std::io::Error::other(error)))?
            .map_err(setup)?;
    }
    Ok(dir)
}

/// Copies the entries of `from` into the existing directory `to`: files with their
/// permissions, directories, symbolic links as links; other kinds (sockets, devices)
/// are left out. `roots` are the workspace and its copy: an absolute link into the
/// workspace is pointed at the same place in the copy, so that a live command writing
/// through it changes the copy, never the workspace.
fn copy_tree(from: &Path, to: &Path, roots: (&Path, &Path)) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let source = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_symlink() {
            let link = std::fs::read_link(&source)?;
            let link = match link.strip_prefix(roots.0) {
                Ok(inside) if link.is_absolute() => roots.1.join(inside),
                _ => link,
            };
            std::os::unix::fs::symlink(link, &target)?;
        } else if kind.is_dir() {
            std::fs::create_dir(&target)?;
            copy_tree(&source, &target, roots)?;
        } else if kind.is_file() {
            std::fs::copy(&source, &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scratch_copy_keeps_links_as_links_and_never_follows_them() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let from = tempfile::tempdir().unwrap();
        std::fs::create_dir(from.path().join("sub")).unwrap();
        std::fs::write(from.path().join("sub/a.txt"), "a").unwrap();
        std::os::unix::fs::symlink(outside.path(), from.path().join("out")).unwrap();
        std::os::unix::fs::symlink(from.path().join("sub/a.txt"), from.path().join("abs")).unwrap();
        let to = tempfile::tempdir().unwrap();
        copy_tree(from.path(), to.path(), (from.path(), to.path())).unwrap();
        // An absolute link into the workspace points into the copy.
        assert_eq!(
            std::fs::read_link(to.path().join("abs")).unwrap(),
            to.path().join("sub/a.txt")
        );
        assert_eq!(
            std::fs::read_to_string(to.path().join("sub/a.txt")).unwrap(),
            "a"
        );
        let link = std::fs::symlink_metadata(to.path().join("out")).unwrap();
        assert!(link.file_type().is_symlink());
        assert_eq!(
            std::fs::read_link(to.path().join("out")).unwrap(),
            outside.path()
        );
    }
}
