//! Shared set-up of the binary's end-to-end tests: a sandbox of temporary HOME, XDG,
//! workspace and database, and the `oxydra` binary run inside it.

#![allow(dead_code)]

pub mod approvals;
pub mod otlp;
pub mod serve;
pub mod webdriver;

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use oxydra_test_support::MockServer;
use serde_json::Value;
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

    /// Sets up `command` (another program, or the binary run another way) as
    /// [`Sandbox::command`] sets up the binary: the sandbox's home, config and data
    /// directories, no provider keys, no standard input.
    pub fn configure(&self, command: &mut Command) {
        command
            .current_dir(self.path())
            .env("HOME", self.path().join("home"))
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .env("XDG_DATA_HOME", self.path().join("data"))
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("GEMINI_API_KEY")
            .env_remove("OXYDRA_PROVIDER")
            .env_remove("OXYDRA_BASE_URL")
            .env_remove("OXYDRA_MODEL")
            .env_remove("OXYDRA_DB")
            .env_remove("OXYDRA_LOCAL_MODEL")
            .env_remove("HF_ENDPOINT")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null());
    }

    /// `oxydra <subcommand> --db DB --workspace WS`: the sandbox's database and workspace.
    pub fn stored_command(&self, subcommand: &str) -> Command {
        let mut command = self.command();
        self.add_store(&mut command, subcommand);
        command
    }

    /// `oxydra <subcommand> --base-url URL --output jsonl --db DB --workspace WS`, against
    /// `server`'s OpenAI-format endpoint.
    pub fn oxydra_command(&self, server: &MockServer, subcommand: &str) -> Command {
        let mut command = self.command();
        self.add_jsonl_against(&mut command, server, subcommand);
        command
    }

    /// [`Sandbox::oxydra_command`] on a terminal of its own (see [`Sandbox::pty_command`]).
    pub fn oxydra_pty_command(&self, server: &MockServer, subcommand: &str) -> Command {
        let mut command = self.pty_command();
        self.add_jsonl_against(&mut command, server, subcommand);
        command
    }

    /// Adds `<subcommand> --db DB --workspace WS --base-url URL --output jsonl`.
    fn add_jsonl_against(&self, command: &mut Command, server: &MockServer, subcommand: &str) {
        self.add_store(command, subcommand);
        command.args(["--base-url", &server.openai_url(), "--output", "jsonl"]);
    }

    /// Adds `<subcommand> --db DB --workspace WS`.
    fn add_store(&self, command: &mut Command, subcommand: &str) {
        command
            .arg(subcommand)
            .arg("--db")
            .arg(&self.db)
            .arg("--workspace")
            .arg(&self.workspace);
    }

    /// `oxydra run` against an OpenAI-format server with the sandbox's db and workspace.
    pub fn run_openai(&self, base_url: &str, extra: &[&str], prompt: &str) -> Output {
        let mut command = self.stored_command("run");
        command
            .args(["--base-url", base_url])
            .args(extra)
            .arg(prompt);
        command.output().unwrap()
    }

    /// Writes `text` as the project configuration `./oxydra.toml` of the sandbox (the
    /// directory the binary runs in) and trusts it with `oxydra trust`, as its user
    /// would before relying on its settings that grant power.
    pub fn write_trusted_config(&self, text: &str) -> PathBuf {
        let path = self.path().join("oxydra.toml");
        std::fs::write(&path, text).unwrap();
        let output = self.command().arg("trust").output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        path
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
pub fn json_lines(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"))
        })
        .collect()
}

/// The events whose `type` is `kind`, in order.
pub fn events_of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|event| event["type"] == kind)
        .collect()
}

/// A compact form of an event stream for comparison: consecutive text deltas merge.
pub fn shape(events: &[Value]) -> Vec<String> {
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
    shared: Arc<(Mutex<CapturedBytes>, Condvar)>,
}

/// What a [`Captured`] output holds.
#[derive(Default)]
struct CapturedBytes {
    /// The bytes so far.
    bytes: Vec<u8>,
    /// The output has ended.
    ended: bool,
}

impl Captured {
    /// Reads `reader` on a thread until its end (or an error, as a pty's master
    /// gives once the child is gone).
    pub fn start(mut reader: impl Read + Send + 'static) -> Self {
        let captured = Self {
            shared: Arc::new((Mutex::new(CapturedBytes::default()), Condvar::new())),
        };
        let shared = Arc::clone(&captured.shared);
        std::thread::spawn(move || {
            let mut buffer = [0_u8; 4096];
            while let Ok(read) = reader.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                shared
                    .0
                    .lock()
                    .unwrap()
                    .bytes
                    .extend_from_slice(&buffer[..read]);
                shared.1.notify_all();
            }
            shared.0.lock().unwrap().ended = true;
            shared.1.notify_all();
        });
        captured
    }

    /// Everything so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.shared.0.lock().unwrap().bytes).into_owned()
    }

    /// Everything, once the output has ended (the child exited): the reader thread may
    /// still be taking the last bytes when the child's exit is seen.
    pub fn all(&self) -> String {
        let deadline = Instant::now() + PATIENCE;
        let mut state = self.shared.0.lock().unwrap();
        while !state.ended {
            let now = Instant::now();
            assert!(now < deadline, "the output did not end");
            state = self.shared.1.wait_timeout(state, deadline - now).unwrap().0;
        }
        String::from_utf8_lossy(&state.bytes).into_owned()
    }

    /// Waits until `done` holds for what was written ([`PATIENCE`] at most); panics
    /// with the text otherwise.
    pub fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        let mut state = self.shared.0.lock().unwrap();
        loop {
            let text = String::from_utf8_lossy(&state.bytes).into_owned();
            if done(&text) {
                return text;
            }
            let now = Instant::now();
            assert!(now < deadline, "timed out waiting for {what}; got:\n{text}");
            state = self.shared.1.wait_timeout(state, deadline - now).unwrap().0;
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

    /// The terminal's local modes as its child sees them (read through the master,
    /// which reports the child end's settings).
    pub fn local_flags(&self) -> nix::sys::termios::LocalFlags {
        nix::sys::termios::tcgetattr(&self.master)
            .unwrap()
            .local_flags
    }

    /// Whether the terminal echoes what is typed, in cooked mode (as a shell leaves it,
    /// and as it is between a line editor's reads).
    pub fn echoes_in_cooked_mode(&self) -> bool {
        use nix::sys::termios::LocalFlags;
        self.local_flags()
            .contains(LocalFlags::ECHO | LocalFlags::ICANON)
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

/// Runs `command` with `input` on its stdin (closed once written) and stdout and stderr
/// piped, and returns its output.
pub fn output_with_stdin(mut command: Command, input: &[u8]) -> Output {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// Spawns `command` with its stdout and stderr piped, each captured as it comes.
pub fn spawn_captured(mut command: Command) -> (KillOnDrop, Captured, Captured) {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = KillOnDrop(command.spawn().unwrap());
    let stdout = Captured::start(child.stdout.take().unwrap());
    let stderr = Captured::start(child.stderr.take().unwrap());
    (child, stdout, stderr)
}

/// [`spawn_captured`] with a pipe to the child's stdin too, for typing lines into it.
pub fn spawn_with_stdin(mut command: Command) -> (KillOnDrop, ChildStdin, Captured, Captured) {
    command.stdin(Stdio::piped());
    let (mut child, stdout, stderr) = spawn_captured(command);
    let stdin = child.stdin.take().unwrap();
    (child, stdin, stdout, stderr)
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

/// Spawns an `oxydra chat` `command` on a new pseudo-terminal and waits for its prompt.
pub fn spawn_chat_in_pty(command: Command) -> (KillOnDrop, Pty) {
    let (child, pty) = spawn_in_pty(command);
    pty.output.wait_for("oxydra> ");
    (child, pty)
}

/// Waits for `server`'s first request ([`PATIENCE`] at most); fails showing `output`.
pub fn wait_for_first_request(server: &MockServer, output: &Captured) {
    assert!(
        server.wait_for_requests(1, PATIENCE),
        "no request arrived: {}",
        output.text()
    );
}

/// Sends SIGINT (a Ctrl-C) to `child`.
pub fn interrupt(child: &Child) {
    kill(
        Pid::from_raw(i32::try_from(child.id()).unwrap()),
        Signal::SIGINT,
    )
    .unwrap();
}

/// Waits for `child` to exit (see [`wait_exit`]) and asserts its exit code; `output`
/// is what a failure shows.
pub fn assert_exit_code(child: &mut Child, code: i32, output: &Captured) {
    let status = wait_exit(child, &|| output.text());
    assert_eq!(status.code(), Some(code), "{}", output.text());
}

/// Checks `done` every 20 ms until it holds ([`PATIENCE`] at most; then the test fails
/// with `what`).
pub fn poll_until(done: impl Fn() -> bool, what: &dyn Fn() -> String) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "{}", what());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet).
pub fn is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| {
            let state = rest.trim_start();
            state.starts_with('Z') || state.starts_with('X')
        }),
    }
}

/// The process id a shell wrote to `path` (`echo $$ > path`), once it is there.
pub fn read_pid(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
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
pub fn json_values(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|line| {
            let start = line.find('{')?;
            serde_json::from_str(line[start..].trim_end()).ok()
        })
        .collect()
}
