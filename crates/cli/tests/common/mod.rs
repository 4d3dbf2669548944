//! Shared set-up of the binary's end-to-end tests: a sandbox of temporary HOME, XDG,
//! workspace and database, and the `oxydra` binary run inside it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use tempfile::TempDir;

/// A sandbox: nothing the child does touches the user's files.
pub struct Sandbox {
    pub dir: TempDir,
    pub workspace: PathBuf,
    pub db: PathBuf,
}

impl Sandbox {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("ws");
        for sub in ["home", "config", "data", "ws"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let db = dir.path().join("db").join("oxydra.db");
        Self { dir, workspace, db }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The binary with a clean environment, run from the sandbox root.
    pub fn command(&self) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_oxydra"));
        command
            .current_dir(self.path())
            .env("HOME", self.path().join("home"))
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .env("XDG_DATA_HOME", self.path().join("data"))
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OXYDRA_PROVIDER")
            .env_remove("OXYDRA_BASE_URL")
            .env_remove("OXYDRA_MODEL")
            .env_remove("OXYDRA_DB")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null());
        command
    }

    /// `oxydra run` against an OpenAI-format server with the sandbox's db and workspace.
    pub fn run_openai(&self, base_url: &str, extra: &[&str], prompt: &str) -> Output {
        let mut command = self.command();
        command
            .arg("run")
            .args(["--base-url", base_url])
            .arg("--db")
            .arg(&self.db)
            .arg("--workspace")
            .arg(&self.workspace)
            .args(extra)
            .arg(prompt);
        command.output().unwrap()
    }

    pub fn sessions(&self, args: &[&str]) -> Output {
        let mut command = self.command();
        command.arg("sessions").args(args).arg("--db").arg(&self.db);
        command.output().unwrap()
    }
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Every stdout line parsed as JSON (a line that is not JSON fails the test).
pub fn json_lines(output: &Output) -> Vec<serde_json::Value> {
    stdout(output)
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"))
        })
        .collect()
}

/// A compact form of an event stream for comparison: consecutive text deltas merge.
pub fn shape(events: &[serde_json::Value]) -> Vec<String> {
    let mut shape: Vec<String> = Vec::new();
    for event in events {
        let kind = event["type"].as_str().unwrap();
        let item = match kind {
            "progress" => format!(
                "progress {} {}",
                event["kind"].as_str().unwrap(),
                event["turn"]
            ),
            "text_delta" => "text".to_owned(),
            "tool_started" => format!(
                "started {} {}",
                event["name"].as_str().unwrap(),
                event["tier"].as_str().unwrap()
            ),
            "tool_completed" => format!("completed {}", event["name"].as_str().unwrap()),
            "tool_failed" => format!("failed {}", event["name"].as_str().unwrap()),
            "turn_completed" => format!("turn {}", event["turn"]),
            "final" => "final".to_owned(),
            "error" => format!("error {}", event["kind"].as_str().unwrap()),
            other => panic!("unexpected event type {other}"),
        };
        if item == "text" && shape.last().map(String::as_str) == Some("text") {
            continue;
        }
        shape.push(item);
    }
    shape
}
