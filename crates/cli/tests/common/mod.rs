//! Shared set-up of the binary's end-to-end tests: a sandbox of temporary HOME, XDG,
//! workspace and database, and the `oxydra` binary run inside it.

#![allow(dead_code)]

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tempfile::TempDir;

/// How long a test waits for something that should come (generous: the machine may
/// be loaded; nothing asserts speed).
pub const PATIENCE: Duration = Duration::from_secs(60);

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
        self.configure(&mut command);
        command
    }

    /// The binary in a session of its own whose controlling terminal is its stdin
    /// (`setsid --ctty`), for [`spawn_in_pty`]: as in a real terminal, `/dev/tty` is
    /// that terminal, never the one the tests run in. (`setsid` execs the binary in
    /// place; `--wait` keeps its exit status should it ever have to fork.)
    pub fn pty_command(&self) -> Command {
        let mut command = Command::new("setsid");
        command
            .args(["--ctty", "--wait"])
            .arg(env!("CARGO_BIN_EXE_oxydra"));
        self.configure(&mut command);
        command.env("TERM", "xterm");
        command
    }

    fn configure(&self, command: &mut Command) {
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

/// What a child writes to one of its outputs, gathered by a thread as it comes.
#[derive(Clone)]
pub struct Captured {
    shared: Arc<(Mutex<Vec<u8>>, Condvar)>,
}

impl Captured {
    /// Reads `reader` on a thread until its end (or an error, as a pty's master
    /// gives once the child is gone).
    pub fn start(mut reader: impl Read + Send + 'static) -> Self {
        let captured = Self {
            shared: Arc::new((Mutex::new(Vec::new()), Condvar::new())),
        };
        let shared = Arc::clone(&captured.shared);
        std::thread::spawn(move || {
            let mut buffer = [0_u8; 4096];
            while let Ok(read) = reader.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                shared.0.lock().unwrap().extend_from_slice(&buffer[..read]);
                shared.1.notify_all();
            }
        });
        captured
    }

    /// Everything so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.shared.0.lock().unwrap()).into_owned()
    }

    /// Waits until `done` holds for what was written ([`PATIENCE`] at most); panics
    /// with the text otherwise.
    pub fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        let mut bytes = self.shared.0.lock().unwrap();
        loop {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if done(&text) {
                return text;
            }
            let now = Instant::now();
            assert!(now < deadline, "timed out waiting for {what}; got:\n{text}");
            bytes = self.shared.1.wait_timeout(bytes, deadline - now).unwrap().0;
        }
    }

    /// Waits until `needle` was written.
    pub fn wait_for(&self, needle: &str) -> String {
        self.wait_until(needle, |text| text.contains(needle))
    }

    /// Waits until `second` was written after `first`.
    pub fn wait_for_after(&self, first: &str, second: &str) -> String {
        self.wait_until(&format!("{second} after {first}"), |text| {
            text.find(first)
                .is_some_and(|at| text[at + first.len()..].contains(second))
        })
    }
}

/// A child on a pseudo-terminal: its stdin, stdout and stderr are the terminal.
pub struct Pty {
    master: File,
    /// What the child printed (and what the terminal echoed).
    pub output: Captured,
}

impl Pty {
    /// Types `text` on the terminal.
    pub fn type_text(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }
}

/// A child killed when dropped, so a failing test leaves no process behind.
pub struct KillOnDrop(pub Child);

impl std::ops::Deref for KillOnDrop {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for KillOnDrop {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Spawns `command` (see [`Sandbox::pty_command`]) on a new pseudo-terminal.
pub fn spawn_in_pty(mut command: Command) -> (KillOnDrop, Pty) {
    let size = nix::pty::Winsize {
        ws_row: 24,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&size), None).unwrap();
    command
        .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
        .stdout(Stdio::from(pty.slave.try_clone().unwrap()))
        .stderr(Stdio::from(pty.slave));
    let child = command.spawn().unwrap();
    // The command holds our copies of the terminal's child end: close them, so the
    // master reads the end of input once the child is gone.
    drop(command);
    let master = File::from(pty.master);
    let output = Captured::start(master.try_clone().unwrap());
    (KillOnDrop(child), Pty { master, output })
}

/// Waits for `child` to exit ([`PATIENCE`] at most; then it is killed and the test fails).
pub fn wait_exit(child: &mut Child, what: &dyn Fn() -> String) -> ExitStatus {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child did not exit; output:\n{}", what());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The JSON lines of `text` (other lines, such as a terminal's echo, are skipped).
pub fn json_values(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter_map(|line| {
            let start = line.find('{')?;
            serde_json::from_str(line[start..].trim_end()).ok()
        })
        .collect()
}
