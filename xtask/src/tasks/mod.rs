//! `cargo xtask tasks`: the eval suite `evals/tasks.toml` (plain one-step and
//! two-step workspace tasks for a small model), run by `oxydra eval` and judged by
//! their outcome.
//!
//! Each task of the suite has a small workspace, a plain user prompt (never the text
//! of a tool call) and checks of what happened: the file written with the right
//! content, or an answer holding a fact that is only in the workspace's files. What
//! the model says about itself counts for nothing. From the eval's JSON report this
//! prints a markdown table (task, successes, tool calls, median seconds) and, with
//! `--write`, puts it into `docs/performance.md` between its markers.
//!
//! Options: `--runs N` (default 3), `--oxydra PATH` (default the debug build in the
//! target dir), `--write`, `--only NAME_OR_TAG`, `--peer`, and after `--` any flags
//! for `oxydra eval` (default: `--provider local --model` the test model). Each run
//! gets a fresh workspace and database (`oxydra eval` sees to it).
//!
//! `--peer` runs the suite a second time against llama-cpp-python's server running
//! the same model with `chatml-function-calling`, driven through oxydra's `openai`
//! provider (see `peer.rs`; install it with `scripts/install-peer-server.sh`), and
//! puts both side by side in the table.

mod eval;
mod table;

use std::path::{Path, PathBuf};

pub(crate) use table::median;
use table::render;

const START: &str = "<!-- task-suite-table:start -->";
const END: &str = "<!-- task-suite-table:end -->";

/// The output-token cap of every turn (`[runtime] max_output_tokens` of the run's
/// user config).
const MAX_OUTPUT_TOKENS: u32 = 256;

/// One way of running the suite: a column group of the table.
struct Setup {
    /// The column group's heading.
    label: String,
    /// The flags for `oxydra eval`.
    flags: Vec<String>,
}

/// The outcome of one run.
struct Outcome {
    success: bool,
    tool_calls: usize,
    seconds: f64,
}

/// Runs the suite with the command-line `args` (after `tasks`).
pub fn run(args: &[String]) -> Result<(), String> {
    let root = crate::workspace_root();
    let mut runs = 3usize;
    let mut oxydra: Option<PathBuf> = None;
    let mut write = false;
    let mut only: Option<String> = None;
    let mut peer = false;
    let mut extra: Vec<String> = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--runs" => {
                runs = rest
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--runs needs a number above 0")?;
            }
            "--oxydra" => oxydra = Some(rest.next().ok_or("--oxydra needs a path")?.into()),
            "--write" => write = true,
            "--only" => only = Some(rest.next().ok_or("--only needs a task name")?.clone()),
            "--peer" => peer = true,
            "--" => {
                extra = rest.by_ref().cloned().collect();
            }
            other => {
                return Err(format!(
                    "unknown option {other} (see xtask/src/tasks/mod.rs)"
                ));
            }
        }
    }
    let target = crate::bench::target_dir(&root, std::env::var_os("CARGO_TARGET_DIR"));
    let oxydra = oxydra.unwrap_or_else(|| target.join("debug/oxydra"));
    if !oxydra.is_file() {
        return Err(format!(
            "{} is missing: build it with `cargo build -p oxydra-cli`",
            oxydra.display()
        ));
    }
    let model = test_model(&root, &target);
    if extra.is_empty() {
        extra = vec![
            "--provider".into(),
            "local".into(),
            "--model".into(),
            model.clone()?.display().to_string(),
        ];
    }
    let mut setups = vec![Setup {
        label: "oxydra".into(),
        flags: extra,
    }];
    let only = only.as_deref();
    let first = setups.first().ok_or("no setup")?;
    let (rows, column) = eval::run_suite(&root, &oxydra, first, runs, only)?;
    let mut columns = vec![column];
    if peer {
        let threads = std::thread::available_parallelism().map_or(2, usize::from);
        let server = crate::peer::PeerServer::start(&target, &model?, threads)?;
        setups.push(Setup {
            label: "llama-cpp-python".into(),
            flags: vec![
                "--provider".into(),
                "openai".into(),
                "--base-url".into(),
                server.base_url.clone(),
                "--model".into(),
                "smollm2-135m".into(),
            ],
        });
        let peer = setups.get(1).ok_or("no peer setup")?;
        columns.push(eval::run_suite(&root, &oxydra, peer, runs, only)?.1);
    }
    let table = render(&rows, &setups, &columns);
    println!("{table}");
    if write {
        let doc = root.join("docs/performance.md");
        crate::bench::write_table(&doc, START, END, &table)?;
        eprintln!("==> wrote the task-suite table to {}", doc.display());
    }
    Ok(())
}

/// The test model: `OXYDRA_TEST_MODEL`, or the one the fetch script put in the
/// target dir.
fn test_model(root: &Path, target: &Path) -> Result<PathBuf, String> {
    if let Some(model) = std::env::var_os("OXYDRA_TEST_MODEL") {
        return Ok(PathBuf::from(model));
    }
    let fetched = target.join("test-models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let main = root.join("target/test-models/SmolLM2-135M-Instruct.Q4_1.gguf");
    [fetched, main]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| "no test model: run scripts/fetch-test-model.sh".into())
}
