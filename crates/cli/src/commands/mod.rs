//! One module per subcommand: each resolves its configuration (`crate::config`),
//! builds what it runs (`crate::setup`) and runs it.

pub mod agents;
pub mod approvals;
pub mod chat;
pub mod chat_attach;
pub mod chat_checkpoints;
pub mod chat_prompt;
pub mod chat_views;
pub mod checkpoints;
pub mod eval;
pub mod init;
pub mod mcp;
pub mod mcp_serve;
pub mod replay;
pub mod replay_report;
pub mod run;
pub mod run_prompt;
pub mod runs;
pub mod runs_changes;
pub mod scrub;
pub mod serve;
pub mod serve_notices;
pub mod sessions;
pub mod trust;

use crate::args::{Cli, Command};
use crate::error::CliError;
use crate::exit_code::Exit;

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> Result<Exit, CliError> {
    match cli.command {
        Command::Scrub(args) => scrub::run(&args),
        Command::Trust(args) => trust::run(&args),
        Command::Init(args) => init::run(&args),
        command => {
            // One thread is plenty for one agent: tools run concurrently on it, and
            // SQLite and blocking reads go to the blocking pool.
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|source| CliError::Stdio {
                    what: "cannot start the async runtime",
                    source,
                })?;
            let result = runtime.block_on(dispatch_async(command));
            // Nothing left running holds anything worth waiting for (stdin readers stop
            // within one poll slice; everything the run stored is committed).
            runtime.shutdown_background();
            result
        }
    }
}

async fn dispatch_async(command: Command) -> Result<Exit, CliError> {
    match command {
        Command::Run(args) => run::run(args.into_inner()).await,
        Command::Chat(args) => chat::run(args.into_inner()).await,
        Command::Sessions(args) => sessions::run(args.into_inner()).await,
        Command::Replay(args) => replay::run(args.into_inner()).await,
        Command::Undo(args) => checkpoints::undo(args.into_inner()).await,
        Command::Agents(args) => agents::run(args.into_inner()).await,
        Command::Serve(args) => serve::run(args.into_inner()).await,
        Command::Runs(args) => runs::run(args.into_inner()).await,
        Command::Approvals(args) => approvals::run(args.into_inner()).await,
        Command::Mcp(args) => mcp::run(args.into_inner()).await,
        Command::Eval(args) => eval::run(args.into_inner()).await,
        Command::Scrub(args) => scrub::run(&args),
        Command::Trust(args) => trust::run(&args),
        Command::Init(args) => init::run(&args),
    }
}
