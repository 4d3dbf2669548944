//! `cargo xtask tasks`: plain one-step workspace tasks for a small model, run end to
//! end through the `oxydra` binary and judged by their outcome.
//!
//! Each task writes a small workspace, runs `oxydra run --output jsonl` on a plain
//! user prompt (never the text of a tool call) and checks what happened: the file
//! written with the right content, or an answer holding a fact that is only in the
//! workspace's files. What the model says about itself counts for nothing. Prints a
//! markdown table (task, successes, tool calls, median seconds) and, with `--write`,
//! puts it into `docs/performance.md` between its markers.
//!
//! Options: `--runs N` (default 3), `--oxydra PATH` (default the debug build in the
//! target dir), `--write`, `--only NAME`, `--peer`, and after `--` any flags for
//! `oxydra run` (default: `--provider local --model` the test model). Each run gets a
//! fresh workspace, config dir and database.
//!
//! `--peer` runs the suite a second time against llama-cpp-python's server running
//! the same model with `chatml-function-calling`, driven through oxydra's `openai`
//! provider (see `peer.rs`; install it with `scripts/install-peer-server.sh`), and
//! puts both side by side in the table.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const START: &str = "<!-- task-suite-table:start -->";
const END: &str = "<!-- task-suite-table:end -->";

/// The output-token cap of every turn (`[runtime] max_output_tokens` of the run's
/// user config).
const MAX_OUTPUT_TOKENS: u32 = 256;

/// How an outcome is judged.
enum Check {
    /// The final answer holds all of these (case-insensitive).
    AnswerHasAll(&'static [&'static str]),
    /// The final answer holds one of these (case-insensitive).
    AnswerHasAny(&'static [&'static str]),
    /// The workspace file holds all of these texts (case-insensitive).
    FileHasAll(&'static str, &'static [&'static str]),
    /// The run made no tool call and answered something.
    AnswerWithoutTools,
}

/// One task: its kind, its workspace, its prompt, its check.
struct Task {
    /// What the task asks for; each kind has several phrasings.
    kind: &'static str,
    /// Whether the prompt is one the suite had before it was broadened (issue 43):
    /// the small-model levers were tuned on these, so they are reported apart.
    seen: bool,
    files: &'static [(&'static str, &'static str)],
    prompt: &'static str,
    check: Check,
}

const SERVER_TOML: (&str, &str) = (
    "config/server.toml",
    "[server]\nhost = \"0.0.0.0\"\nport = 8471\nworkers = 3\n",
);
const SERVICE_README: (&str, &str) = ("README.md", "A small web service.\n");
const PLAN: (&str, &str) = (
    "notes/plan.md",
    "# Plan for the weekend\n\n1. Paint the fence teal.\n2. Fix the bike's back wheel.\n",
);
const INBOX: &[(&str, &str)] = &[
    ("inbox/quokka-report.txt", "draft\n"),
    ("inbox/zephyr-invoice.pdf.txt", "total 12\n"),
    ("README.md", "Workspace.\n"),
];
const DOCS: &[(&str, &str)] = &[
    (
        "docs/cafeteria.md",
        "The cafeteria opens at nine and closes at four.\n",
    ),
    ("docs/parking.md", "Visitors park on level two.\n"),
    (
        "docs/launch.md",
        "The launch code word is PELICAN. Tell no one.\n",
    ),
];
const FROBNICATOR: (&str, &str) = (
    "README.md",
    "# Frobnicator\n\nFrobnicator converts CSV spreadsheets into YAML documents. \
     It was written by Ada Quill in 2021 and runs on any machine with Python 3.\n",
);
const PLAIN_README: (&str, &str) = ("README.md", "Workspace.\n");

const TASKS: &[Task] = &[
    // Read one value from a config file.
    Task {
        kind: "read a config value",
        seen: true,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "What port does the server in config/server.toml listen on?",
        check: Check::AnswerHasAll(&["8471"]),
    },
    Task {
        kind: "read a config value",
        seen: false,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "I need the port number set in config/server.toml, please.",
        check: Check::AnswerHasAll(&["8471"]),
    },
    Task {
        kind: "read a config value",
        seen: false,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "Look at config/server.toml. Which host address is configured?",
        check: Check::AnswerHasAll(&["0.0.0.0"]),
    },
    Task {
        kind: "read a config value",
        seen: false,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "Sur quel port écoute le serveur de config/server.toml ?",
        check: Check::AnswerHasAll(&["8471"]),
    },
    // Answer a question from a note.
    Task {
        kind: "answer from a note",
        seen: true,
        files: &[PLAN],
        prompt: "What colour will the fence be painted, according to notes/plan.md?",
        check: Check::AnswerHasAll(&["teal"]),
    },
    Task {
        kind: "answer from a note",
        seen: false,
        files: &[PLAN],
        prompt: "Check notes/plan.md: what needs fixing on the bike?",
        check: Check::AnswerHasAll(&["wheel"]),
    },
    Task {
        kind: "answer from a note",
        seen: false,
        files: &[PLAN],
        prompt: "My weekend plan is in notes/plan.md. Tell me the fence colour I picked.",
        check: Check::AnswerHasAll(&["teal"]),
    },
    // List a folder.
    Task {
        kind: "list a folder",
        seen: true,
        files: INBOX,
        prompt: "Which files are in the inbox folder?",
        check: Check::AnswerHasAll(&["quokka-report", "zephyr-invoice"]),
    },
    Task {
        kind: "list a folder",
        seen: false,
        files: INBOX,
        prompt: "Show me what is inside inbox.",
        check: Check::AnswerHasAll(&["quokka-report", "zephyr-invoice"]),
    },
    Task {
        kind: "list a folder",
        seen: false,
        files: INBOX,
        prompt: "Give me the names of everything in the inbox directory.",
        check: Check::AnswerHasAll(&["quokka-report", "zephyr-invoice"]),
    },
    // Write a new file.
    Task {
        kind: "write a file",
        seen: true,
        files: &[PLAIN_README],
        prompt: "Create a file named greeting.txt that says: hello from the workspace",
        check: Check::FileHasAll("greeting.txt", &["hello from the workspace"]),
    },
    Task {
        kind: "write a file",
        seen: false,
        files: &[PLAIN_README],
        prompt: "Put the text 'meeting at noon' into a new file reminder.txt.",
        check: Check::FileHasAll("reminder.txt", &["meeting at noon"]),
    },
    Task {
        kind: "write a file",
        seen: false,
        files: &[PLAIN_README],
        prompt: "I need todo.md with the line: buy milk",
        check: Check::FileHasAll("todo.md", &["buy milk"]),
    },
    Task {
        kind: "write a file",
        seen: false,
        files: &[PLAIN_README],
        prompt: "Crée un fichier bonjour.txt qui contient : salut tout le monde",
        check: Check::FileHasAll("bonjour.txt", &["salut tout le monde"]),
    },
    // Find the file that holds something.
    Task {
        kind: "find the file that mentions",
        seen: true,
        files: DOCS,
        prompt: "Which file in docs mentions the launch code word?",
        check: Check::AnswerHasAll(&["launch.md"]),
    },
    Task {
        kind: "find the file that mentions",
        seen: false,
        files: DOCS,
        prompt: "Somewhere in docs the launch code word is written down. In which file?",
        check: Check::AnswerHasAll(&["launch.md"]),
    },
    Task {
        kind: "find the file that mentions",
        seen: false,
        files: DOCS,
        prompt: "Where in docs can visitors find out about parking? Name the file.",
        check: Check::AnswerHasAll(&["parking.md"]),
    },
    Task {
        kind: "find the file that mentions",
        seen: false,
        files: DOCS,
        prompt: "Welche Datei in docs nennt das Codewort für den Start?",
        check: Check::AnswerHasAll(&["launch.md"]),
    },
    // Summarise a file.
    Task {
        kind: "summarise a file",
        seen: true,
        files: &[FROBNICATOR],
        prompt: "Summarise README.md",
        check: Check::AnswerHasAny(&["Frobnicator", "CSV", "YAML"]),
    },
    Task {
        kind: "summarise a file",
        seen: false,
        files: &[FROBNICATOR],
        prompt: "What is README.md about?",
        check: Check::AnswerHasAny(&["Frobnicator", "CSV", "YAML"]),
    },
    Task {
        kind: "summarise a file",
        seen: false,
        files: &[FROBNICATOR],
        prompt: "In one sentence: what does the project in README.md do?",
        check: Check::AnswerHasAny(&["Frobnicator", "CSV", "YAML"]),
    },
    // Two steps: read a value, then write it to a new file.
    Task {
        kind: "read then write",
        seen: false,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "Copy the port number from config/server.toml into a new file port.txt.",
        check: Check::FileHasAll("port.txt", &["8471"]),
    },
    Task {
        kind: "read then write",
        seen: false,
        files: &[PLAN],
        prompt: "Read notes/plan.md and save the colour of the fence in colour.txt.",
        check: Check::FileHasAll("colour.txt", &["teal"]),
    },
    Task {
        kind: "read then write",
        seen: false,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "host.txt should hold the host address that config/server.toml sets.",
        check: Check::FileHasAll("host.txt", &["0.0.0.0"]),
    },
    // Two steps: change one value of a file in place, keeping the rest.
    Task {
        kind: "edit a value in place",
        seen: false,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "Change the port in config/server.toml to 9090.",
        check: Check::FileHasAll(
            "config/server.toml",
            &["port = 9090", "host = \"0.0.0.0\"", "workers = 3"],
        ),
    },
    Task {
        kind: "edit a value in place",
        seen: false,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "Set workers to 12 in config/server.toml; leave everything else as it is.",
        check: Check::FileHasAll(
            "config/server.toml",
            &["workers = 12", "port = 8471", "host = \"0.0.0.0\""],
        ),
    },
    Task {
        kind: "edit a value in place",
        seen: false,
        files: &[PLAN],
        prompt: "We chose green instead: update notes/plan.md so the fence is painted green.",
        check: Check::FileHasAll("notes/plan.md", &["fence green", "back wheel"]),
    },
    // No task at all: a greeting or a question the model can answer itself.
    Task {
        kind: "chat without tools",
        seen: false,
        files: &[PLAIN_README],
        prompt: "hello",
        check: Check::AnswerWithoutTools,
    },
    Task {
        kind: "chat without tools",
        seen: false,
        files: &[PLAIN_README],
        prompt: "Bonjour ! Comment ça va ?",
        check: Check::AnswerWithoutTools,
    },
    Task {
        kind: "chat without tools",
        seen: false,
        files: &[PLAIN_README],
        prompt: "Where should I store report.pdf?",
        check: Check::AnswerWithoutTools,
    },
];

impl Task {
    /// The task's name in the table and for `--only`: its kind and its prompt.
    fn name(&self) -> String {
        format!("{}: {}", self.kind, self.prompt)
    }
}

/// One way of running the suite: a column group of the table.
struct Setup {
    /// The column group's heading.
    label: String,
    /// The flags for `oxydra run`.
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
            other => return Err(format!("unknown option {other} (see xtask/src/tasks.rs)")),
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
    let tasks: Vec<&Task> = TASKS
        .iter()
        .filter(|task| {
            only.as_deref()
                .is_none_or(|name| task.name().contains(name))
        })
        .collect();
    let mut setups = vec![Setup {
        label: "oxydra".into(),
        flags: extra,
    }];
    let mut columns = vec![run_setup(&oxydra, setups.first(), &tasks, runs)?];
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
        columns.push(run_setup(&oxydra, setups.get(1), &tasks, runs)?);
    }
    let rows: Vec<Row> = tasks.iter().map(|task| Row::of(task)).collect();
    let table = render(&rows, &setups, &columns);
    println!("{table}");
    if write {
        let doc = root.join("docs/performance.md");
        crate::bench::write_table(&doc, START, END, &table)?;
        eprintln!("==> wrote the task-suite table to {}", doc.display());
    }
    Ok(())
}

/// Runs every task of `tasks` `runs` times with `setup`'s flags: one column group.
fn run_setup(
    oxydra: &Path,
    setup: Option<&Setup>,
    tasks: &[&Task],
    runs: usize,
) -> Result<Vec<Vec<Outcome>>, String> {
    let setup = setup.ok_or("no setup")?;
    let scratch = std::env::temp_dir().join(format!("oxydra-tasks-{}", std::process::id()));
    let mut column = Vec::new();
    for task in tasks {
        let mut outcomes = Vec::new();
        for index in 0..runs {
            let slug: String = task
                .name()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .take(60)
                .collect();
            let dir = scratch.join(format!("{slug}-{index}"));
            let outcome = run_task(oxydra, &setup.flags, task, &dir)?;
            eprintln!(
                "{:<16} {:<60} run {}: {} ({} tool calls, {:.1} s)",
                setup.label,
                task.name(),
                index + 1,
                if outcome.success { "done" } else { "failed" },
                outcome.tool_calls,
                outcome.seconds
            );
            outcomes.push(outcome);
        }
        column.push(outcomes);
    }
    let _ = fs::remove_dir_all(&scratch);
    Ok(column)
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

/// Runs `task` once in a fresh `dir` and judges it.
fn run_task(oxydra: &Path, extra: &[String], task: &Task, dir: &Path) -> Result<Outcome, String> {
    let _ = fs::remove_dir_all(dir);
    let workspace = dir.join("workspace");
    let home = dir.join("home");
    for (path, content) in task.files {
        let file = workspace.join(path);
        if let Some(parent) = file.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        fs::write(&file, content).map_err(|e| format!("{}: {e}", file.display()))?;
    }
    let config = home.join(".config/oxydra");
    fs::create_dir_all(&config).map_err(|e| format!("{}: {e}", config.display()))?;
    // A cap on each answer, so a model that rambles fails its task in seconds rather
    // than at the turn timeout.
    fs::write(
        config.join("config.toml"),
        format!("[runtime]\nmax_output_tokens = {MAX_OUTPUT_TOKENS}\n"),
    )
    .map_err(|e| format!("{}: {e}", config.display()))?;
    let started = Instant::now();
    let output = Command::new(oxydra)
        .arg("run")
        .args(extra)
        .arg("--workspace")
        .arg(&workspace)
        .arg("--db")
        .arg(dir.join("oxydra.db"))
        .args([
            "--output",
            "jsonl",
            "--approve",
            "never",
            "--max-turns",
            "4",
        ])
        .arg(task.prompt)
        .current_dir(&workspace)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env_remove("OXYDRA_LOCAL_MODEL")
        .output()
        .map_err(|e| format!("could not run {}: {e}", oxydra.display()))?;
    let seconds = started.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let tool_calls = events
        .iter()
        .filter(|e| e["type"] == "tool_started")
        .count();
    let answer = events
        .iter()
        .rev()
        .find(|e| e["type"] == "final")
        .and_then(|e| e["text"].as_str())
        .unwrap_or_default()
        .to_lowercase();
    let success = match &task.check {
        Check::AnswerHasAll(facts) => facts.iter().all(|f| answer.contains(&f.to_lowercase())),
        Check::AnswerHasAny(facts) => facts.iter().any(|f| answer.contains(&f.to_lowercase())),
        Check::FileHasAll(path, texts) => {
            fs::read_to_string(workspace.join(path)).is_ok_and(|content| {
                let content = content.to_lowercase();
                texts.iter().all(|t| content.contains(&t.to_lowercase()))
            })
        }
        Check::AnswerWithoutTools => tool_calls == 0 && !answer.trim().is_empty(),
    };
    if !success {
        // What went wrong, for whoever tunes the small-model levers: the calls made and
        // the answer given.
        let calls: Vec<String> = events
            .iter()
            .filter(|e| e["type"] == "tool_started")
            .map(|e| {
                format!(
                    "{}{}",
                    e["name"].as_str().unwrap_or("?"),
                    e["arguments"].as_str().unwrap_or("")
                )
            })
            .collect();
        let said: String = answer.chars().take(160).collect();
        eprintln!("    calls: {calls:?}; answer: {said:?}");
    }
    Ok(Outcome {
        success,
        tool_calls,
        seconds,
    })
}

/// The median of `values` (0 for none).
pub(crate) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values.get(n / 2).copied().unwrap_or_default(),
        n => {
            let a = values.get(n / 2 - 1).copied().unwrap_or_default();
            let b = values.get(n / 2).copied().unwrap_or_default();
            (a + b) / 2.0
        }
    }
}

/// What the table shows of a task besides its outcomes.
struct Row {
    kind: &'static str,
    prompt: &'static str,
    seen: bool,
}

impl Row {
    fn of(task: &Task) -> Self {
        Self {
            kind: task.kind,
            prompt: task.prompt,
            seen: task.seen,
        }
    }
}

/// The mean and the lowest and highest of `rates` (0 for none).
fn mean_and_range(rates: &[f64]) -> (f64, f64, f64) {
    if rates.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let mean = rates.iter().sum::<f64>() / rates.len() as f64;
    let low = rates.iter().copied().fold(f64::INFINITY, f64::min);
    let high = rates.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, low, high)
}

/// The success rate of each replicate (run index) of the suite over the rows that
/// `keep` selects: one rate per run, so their spread says how much one suite swings.
fn rates_per_run(rows: &[Row], column: &[Vec<Outcome>], keep: impl Fn(&Row) -> bool) -> Vec<f64> {
    let runs = column.iter().map(Vec::len).max().unwrap_or(0);
    (0..runs)
        .filter_map(|run| {
            let picked: Vec<bool> = rows
                .iter()
                .zip(column)
                .filter(|(row, _)| keep(row))
                .filter_map(|(_, outcomes)| outcomes.get(run).map(|o| o.success))
                .collect();
            (!picked.is_empty())
                .then(|| picked.iter().filter(|&&done| done).count() as f64 / picked.len() as f64)
        })
        .collect()
}

/// `mean% (per run: a%, b%, c%; range low–high)` of `rates`.
fn rate_summary(rates: &[f64]) -> String {
    let (mean, low, high) = mean_and_range(rates);
    let each = rates
        .iter()
        .map(|r| format!("{:.0}%", r * 100.0))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "{:.0}% (per run: {each}; spread {:.0}–{:.0}%)",
        mean * 100.0,
        low * 100.0,
        high * 100.0
    )
}

/// The table: a row per task (kind, prompt, whether the suite had that phrasing
/// before it was broadened), a column group per setup (successes, tool calls of each
/// run, median time); then per setup the success rate of each kind and of the seen
/// and the new phrasings, as the mean over the runs and its spread.
fn render(rows: &[Row], setups: &[Setup], columns: &[Vec<Vec<Outcome>>]) -> String {
    let mut head = String::from("| kind | prompt | phrasing |");
    let mut rule = String::from("|---|---|---|");
    for setup in setups {
        let label = &setup.label;
        head.push_str(&format!(
            " {label}: success | {label}: tool calls (per run) | {label}: median time |"
        ));
        rule.push_str("---|---|---|");
    }
    let mut out = format!("{head}\n{rule}\n");
    for (index, row) in rows.iter().enumerate() {
        let phrasing = if row.seen { "seen" } else { "new" };
        out.push_str(&format!(
            "| {} | {} | {phrasing} |",
            row.kind,
            row.prompt.replace('|', "\\|")
        ));
        for column in columns {
            let outcomes = column.get(index).map(Vec::as_slice).unwrap_or_default();
            let successes = outcomes.iter().filter(|o| o.success).count();
            let calls = outcomes
                .iter()
                .map(|o| o.tool_calls.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            let time = median(outcomes.iter().map(|o| o.seconds).collect());
            out.push_str(&format!(
                " {successes}/{} | {calls} | {time:.1} s |",
                outcomes.len()
            ));
        }
        out.push('\n');
    }
    let mut kinds: Vec<&str> = Vec::new();
    for row in rows {
        if !kinds.contains(&row.kind) {
            kinds.push(row.kind);
        }
    }
    for (setup, column) in setups.iter().zip(columns) {
        let done = column.iter().flatten().filter(|o| o.success).count();
        let total = column.iter().map(Vec::len).sum::<usize>();
        let calls = column.iter().flatten().map(|o| o.tool_calls).sum::<usize>();
        out.push_str(&format!(
            "\n{}: {done}/{total} done, {calls} tool calls, with `oxydra run {}` and \
             `max_output_tokens = {MAX_OUTPUT_TOKENS}`.\n\n",
            setup.label,
            shown_flags(&setup.flags)
        ));
        out.push_str(&format!(
            "- new phrasings: {}\n",
            rate_summary(&rates_per_run(rows, column, |row| !row.seen))
        ));
        out.push_str(&format!(
            "- seen phrasings: {}\n",
            rate_summary(&rates_per_run(rows, column, |row| row.seen))
        ));
        for kind in &kinds {
            out.push_str(&format!(
                "- {kind}: {}\n",
                rate_summary(&rates_per_run(rows, column, |row| row.kind == *kind))
            ));
        }
    }
    out
}

/// The flags as the table shows them: file paths by their file name, loopback URLs
/// without their (random) port.
fn shown_flags(flags: &[String]) -> String {
    flags
        .iter()
        .map(|a| {
            if a.starts_with("http://127.0.0.1:") {
                return "http://127.0.0.1:PORT/v1".to_owned();
            }
            Path::new(a)
                .file_name()
                .filter(|_| a.contains('/'))
                .map_or(a.clone(), |f| f.to_string_lossy().into_owned())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_odd_and_even_counts() {
        assert!((median(vec![3.0, 1.0, 2.0]) - 2.0).abs() < f64::EPSILON);
        assert!((median(vec![4.0, 1.0, 2.0, 3.0]) - 2.5).abs() < f64::EPSILON);
        assert!(median(Vec::new()).abs() < f64::EPSILON);
    }

    fn row(kind: &'static str, seen: bool) -> Row {
        Row {
            kind,
            prompt: "p",
            seen,
        }
    }

    #[test]
    fn the_table_counts_successes_and_names_the_model_file_only() {
        let outcome = |success, tool_calls| Outcome {
            success,
            tool_calls,
            seconds: 2.0,
        };
        let setups = [Setup {
            label: "oxydra".into(),
            flags: vec!["--model".into(), "/a/b/m.gguf".into()],
        }];
        let columns = vec![vec![vec![outcome(true, 1), outcome(false, 0)]]];
        let table = render(&[row("t", true)], &setups, &columns);
        assert!(
            table.contains("| t | p | seen | 1/2 | 1, 0 | 2.0 s |"),
            "{table}"
        );
        assert!(
            table.contains("oxydra: 1/2 done, 1 tool calls, with `oxydra run --model m.gguf`"),
            "{table}"
        );
        assert!(
            table.contains("- seen phrasings: 50% (per run: 100%, 0%; spread 0–100%)"),
            "{table}"
        );
    }

    #[test]
    fn a_peer_gets_a_column_group_of_its_own_and_no_port() {
        let outcome = |success, tool_calls| Outcome {
            success,
            tool_calls,
            seconds: 1.0,
        };
        let setups = [
            Setup {
                label: "oxydra".into(),
                flags: vec!["--provider".into(), "local".into()],
            },
            Setup {
                label: "peer".into(),
                flags: vec!["--base-url".into(), "http://127.0.0.1:4321/v1".into()],
            },
        ];
        let columns = vec![
            vec![vec![outcome(true, 2)], vec![outcome(true, 1)]],
            vec![vec![outcome(false, 0)], vec![outcome(true, 3)]],
        ];
        let table = render(&[row("a", true), row("b", false)], &setups, &columns);
        assert!(
            table.contains("| a | p | seen | 1/1 | 2 | 1.0 s | 0/1 | 0 | 1.0 s |"),
            "{table}"
        );
        assert!(
            table.contains("| b | p | new | 1/1 | 1 | 1.0 s | 1/1 | 3 | 1.0 s |"),
            "{table}"
        );
        assert!(table.contains("peer: 1/2 done, 3 tool calls"), "{table}");
        assert!(table.contains("http://127.0.0.1:PORT/v1"), "{table}");
        assert!(!table.contains("4321"), "{table}");
    }

    #[test]
    fn each_kind_has_three_phrasings_and_the_suite_two_languages_and_two_steps() {
        let mut kinds: Vec<&str> = TASKS.iter().map(|task| task.kind).collect();
        kinds.dedup();
        for kind in &kinds {
            let phrasings = TASKS.iter().filter(|task| task.kind == *kind).count();
            assert!(phrasings >= 3, "{kind}: {phrasings} phrasings");
        }
        assert!(kinds.contains(&"read then write"));
        assert!(kinds.contains(&"edit a value in place"));
        assert!(TASKS.iter().any(|task| !task.prompt.is_ascii()));
        assert!(TASKS.iter().filter(|task| task.seen).count() < TASKS.len() / 2);
    }

    #[test]
    fn no_prompt_spells_out_a_tool_call() {
        for task in TASKS {
            assert!(!task.prompt.contains("tool"), "{}", task.prompt);
            assert!(!task.prompt.contains('{'), "{}", task.prompt);
        }
    }
}
