//! `oxydra serve` as the tests run it: a sandbox with a (trusted or invalid) project
//! config, the server started on a free port, and a runtime for HTTP clients.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use oxydra_test_support::MockServer;
use serde_json::Value;

use super::Sandbox;

/// A sandbox whose `./oxydra.toml` is `config`, trusted.
pub fn sandbox_with_config(config: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write_trusted_config(config);
    sandbox
}

/// A sandbox whose `./oxydra.toml` is `config`, which cannot be trusted (it is invalid).
pub fn sandbox_with_invalid_config(config: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path().join("oxydra.toml"), config).unwrap();
    sandbox
}

/// `oxydra serve --addr 127.0.0.1:0` and the address it reports listening on.
pub struct Server {
    pub child: Child,
    pub base: String,
    lines: Receiver<String>,
}

impl Server {
    pub fn start(sandbox: &Sandbox, envs: &[(&str, &str)]) -> Self {
        Self::start_with(sandbox, envs, &["--addr", "127.0.0.1:0"])
    }

    pub fn start_with(sandbox: &Sandbox, envs: &[(&str, &str)], args: &[&str]) -> Self {
        Self::start_on(sandbox, envs, args, sandbox.db.as_os_str())
    }

    /// `oxydra serve` of `sandbox` on a free loopback port, its model served by
    /// `provider` (`--base-url`).
    pub fn start_against(sandbox: &Sandbox, provider: &MockServer) -> Self {
        Self::start_against_on(sandbox, provider, sandbox.db.as_os_str())
    }

    /// Like [`Server::start_against`] on the database `db` (a file or a URL).
    pub fn start_against_on(
        sandbox: &Sandbox,
        provider: &MockServer,
        db: &std::ffi::OsStr,
    ) -> Self {
        let url = provider.openai_url();
        Self::start_on(
            sandbox,
            &[],
            &["--addr", "127.0.0.1:0", "--base-url", &url],
            db,
        )
    }

    /// Like [`Server::start_with`] on the database `db` (a file or a URL).
    pub fn start_on(
        sandbox: &Sandbox,
        envs: &[(&str, &str)],
        args: &[&str],
        db: &std::ffi::OsStr,
    ) -> Self {
        let command = serve_command(sandbox, envs, args, db);
        let (child, base, lines) = spawn_listening(command, "oxydra serve");
        Self { child, base, lines }
    }

    /// Like [`Server::start_with`], with the file limit (`RLIMIT_NOFILE`) `soft` and
    /// `hard`, set as a user would: `sh -c 'ulimit -S -n SOFT && ulimit -H -n HARD &&
    /// exec oxydra …'` (no `pre_exec`: the workspace forbids unsafe code).
    pub fn start_under_file_limit(
        sandbox: &Sandbox,
        envs: &[(&str, &str)],
        args: &[&str],
        soft: u64,
        hard: u64,
    ) -> Self {
        let inner = serve_command(sandbox, envs, args, sandbox.db.as_os_str());
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!(
                "ulimit -S -n {soft} && ulimit -H -n {hard} && exec \"$0\" \"$@\""
            ))
            .arg(inner.get_program())
            .args(inner.get_args())
            .stdin(Stdio::null());
        if let Some(dir) = inner.get_current_dir() {
            command.current_dir(dir);
        }
        for (key, value) in inner.get_envs() {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        let (child, base, lines) = spawn_listening(command, "oxydra serve");
        Self { child, base, lines }
    }

    /// The next stderr line containing `needle`, waiting up to 10 s (a panic after).
    pub fn line_with(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(error) => panic!("no line with `{needle}` on stderr: {error}"),
            }
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// SIGTERM, then the exit code and the rest of stderr.
    pub fn terminate(mut self) -> (Option<i32>, String) {
        terminate(&mut self.child, &self.lines)
    }
}

impl Drop for Server {
    /// A test that failed before [`Server::terminate`] leaves no server behind.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `oxydra serve ARGS --db DB --workspace WS` in `sandbox`, with `envs`.
fn serve_command(
    sandbox: &Sandbox,
    envs: &[(&str, &str)],
    args: &[&str],
    db: &std::ffi::OsStr,
) -> Command {
    let mut command = sandbox.command();
    command
        .arg("serve")
        .args(args)
        .arg("--db")
        .arg(db)
        .arg("--workspace")
        .arg(&sandbox.workspace)
        .envs(envs.iter().copied());
    command
}

/// Spawns `command` (an `oxydra` server: `serve`, `mcp serve --listen`) with stderr piped
/// and waits up to 30 s for the address it prints after "listening on "; `what` names
/// the server when it never does. Returns the child, the address and the receiver of
/// the stderr lines that follow.
pub fn spawn_listening(mut command: Command, what: &str) -> (Child, String, Receiver<String>) {
    command.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let err = child.stderr.take().unwrap();
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    let address = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => match line.split("listening on ").nth(1) {
                Some(rest) => break rest.split_whitespace().next().map(str::to_owned),
                None => seen.push(line),
            },
            Err(_) => break None,
        }
    };
    match address {
        Some(address) => (child, address, lines),
        None => {
            let _ = child.kill();
            let status = child.wait();
            panic!("{what} did not report its address ({status:?}): {seen:?}");
        }
    }
}

/// SIGTERM to a server of [`spawn_listening`], then its exit code and the rest of its
/// stderr.
pub fn terminate(child: &mut Child, lines: &Receiver<String>) -> (Option<i32>, String) {
    kill(
        Pid::from_raw(i32::try_from(child.id()).unwrap()),
        Signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    (status.code(), rest_of(lines))
}

/// The lines still to come once the process has exited: up to the reader's end of
/// file, which comes once the pipe is drained. Taking only what had arrived by the
/// exit lost the last line (`stopped`) when the reader thread had not yet passed it
/// on. A descendant still holding the pipe open (a server it started) would keep the
/// end of file away; a second without a new line ends the wait then.
fn rest_of(lines: &Receiver<String>) -> String {
    let mut rest = Vec::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(1)) {
        rest.push(line);
    }
    rest.join("\n")
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The agents most serve tests use.
pub const CONFIG: &str = r#"
[[agents]]
name = "researcher"
type = "agent"
description = "Research assistant"
system_prompt = "You research questions."
tools = ["file_read"]

[[agents]]
name = "reader"
type = "deterministic"
description = "Reads one workspace file"
parameters_schema = { type = "object", required = ["file"], properties = { file = { type = "string", minLength = 1 } }, additionalProperties = false }
[[agents.steps]]
tool = "file_read"
args = { path = "{{file}}" }
"#;

/// `oxydra agents list --db` on the sandbox's database, run to its end.
pub fn agents_list(sandbox: &Sandbox) -> Output {
    let mut command = sandbox.command();
    command.args(["agents", "list", "--db"]).arg(&sandbox.db);
    command.output().unwrap()
}

/// The body of `GET url`, as JSON.
pub async fn get_json(client: &reqwest::Client, url: &str) -> Value {
    client.get(url).send().await.unwrap().json().await.unwrap()
}

/// Posts a run as JSON and waits for it to end.
pub async fn run_to_end(client: &reqwest::Client, server: &Server, body: Value) -> Value {
    let created = client
        .post(server.url("/runs"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    let run_id = created["run_id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let run: Value = get_json(client, &server.url(&format!("/runs/{run_id}"))).await;
        let status = run["status"].as_str().unwrap().to_owned();
        if status != "pending" && status != "running" {
            return run;
        }
        assert!(Instant::now() < deadline, "run never finished: {run}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
