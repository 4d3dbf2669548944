//! `cargo xtask run [ARGS…]`: the main job from a fresh clone, in one command.
//!
//! It installs the local model's build dependencies when they are missing, fetches the
//! recommended small model (SmolLM2-135M-Instruct, Q4_1) once when no local model is
//! at hand, builds the CLI and runs `oxydra run ARGS…` in the current directory. A
//! configured provider (an API key, `--base-url`, a config file) still wins: the model
//! is offered only as the fallback `oxydra` uses when nothing else is configured
//! (`OXYDRA_LOCAL_MODEL`).

use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// The variable `oxydra` reads a fallback local model from.
const LOCAL_MODEL_VAR: &str = "OXYDRA_LOCAL_MODEL";

/// Where `oxydra` looks for its default model when nothing names one:
/// `<data dir>/oxydra/models/default.gguf` (the `dirs` crate's data dir).
fn default_model_path() -> Option<PathBuf> {
    let data_dir = match std::env::var_os("XDG_DATA_HOME").filter(|dir| !dir.is_empty()) {
        Some(dir) if cfg!(target_os = "linux") => PathBuf::from(dir),
        _ => {
            let home = PathBuf::from(std::env::var_os("HOME")?);
            if cfg!(target_os = "macos") {
                home.join("Library/Application Support")
            } else {
                home.join(".local/share")
            }
        }
    };
    Some(data_dir.join("oxydra/models/default.gguf"))
}

/// Sets up what the main job needs, then runs it; the exit code is `oxydra`'s.
pub fn run(args: &[String]) -> Result<ExitCode, String> {
    let root = crate::workspace_root();
    crate::setup::build_dependencies(&root)?;
    let mut command = Command::new("cargo");
    command.args(["run", "--quiet", "-p", "oxydra-cli", "--", "run"]);
    command.args(args);
    let model_at_hand = std::env::var_os(LOCAL_MODEL_VAR).is_some_and(|value| !value.is_empty())
        || default_model_path().is_some_and(|path| path.is_file());
    if !model_at_hand {
        let model = crate::setup::test_model(&root)?;
        eprintln!(
            "==> local model (used when no other provider is configured): {}",
            model.display()
        );
        command.env(LOCAL_MODEL_VAR, model);
    }
    eprintln!("==> building and running `oxydra run` (the first build takes a few minutes)");
    let status = command
        .status()
        .map_err(|error| format!("could not start `cargo run -p oxydra-cli`: {error}"))?;
    Ok(status
        .code()
        .and_then(|code| u8::try_from(code).ok())
        .map_or(ExitCode::FAILURE, ExitCode::from))
}
