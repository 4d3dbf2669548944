//! `cargo xtask serve-load [--clients N] [--release] [--no-build] [--oxydra PATH]
//! [--server PATH] [--max-connections N]`: `oxydra serve` under N concurrent
//! `POST /runs` (issue 50.2: "serve keeps answering 1,000 concurrent `POST /runs` within
//! 1.5 s"; docs/performance.md, "Serve under 1,000 concurrent POST /runs").
//!
//! It starts, each as its own process on loopback, a provider (`scenario_server
//! answer`: every chat request gets a short final answer) and `oxydra serve` on a fresh
//! SQLite database, workspace and home, with one AI agent. Then N client threads, held
//! at a barrier, each open a connection at once and send one `POST /runs`
//! (`Connection: close`); each answer's latency runs from the moment its client began
//! to connect to the answer's last byte. Meanwhile a prober sends `GET /agents` (a store
//! read, as a health check would make) one after another. Once every client has its
//! answer, it waits for every accepted run to end and checks that each is in the
//! store. It prints the answers by status, the latency distribution (median, p99,
//! max), the prober's, the server's CPU time and peak RSS, and the runs' ends; it fails
//! when a request got no answer or a run was lost.
//!
//! By default it builds and measures the debug binaries (`-p oxydra-cli`,
//! `-p oxydra-test-support`); `--release` the release ones.

mod http;
mod process;
mod report;
mod stats;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Barrier, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use process::{cpu_seconds, load_average, proc_status_kib, raise_file_limit};
use report::Report;
use stats::Summary;

/// The goal of issue 50.2: every answer within this time of its request.
const GOAL: Duration = Duration::from_millis(1500);

/// The agent every run starts. `[serve]` is filled in by `config`.
const AGENT: &str = r#"
[[agents]]
name = "answerer"
type = "agent"
description = "Answers one question"
system_prompt = "You answer in one sentence."
tools = []
"#;

/// The body of each `POST /runs`.
const BODY: &str = r#"{"agent_name":"answerer","parameters":{"prompt":"Say hello."}}"#;

/// The command line, parsed.
#[derive(Debug, PartialEq)]
struct Options {
    clients: usize,
    release: bool,
    build: bool,
    oxydra: Option<PathBuf>,
    server: Option<PathBuf>,
    max_connections: Option<usize>,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        clients: 1000,
        release: false,
        build: true,
        oxydra: None,
        server: None,
        max_connections: None,
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = |flag: &str| {
            rest.next()
                .filter(|value| !value.is_empty())
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        let number = |flag: &str, text: String| {
            text.parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{flag} takes a positive number, not `{text}`"))
        };
        match arg.as_str() {
            "--clients" => options.clients = number("--clients", value("--clients")?)?,
            "--max-connections" => {
                options.max_connections =
                    Some(number("--max-connections", value("--max-connections")?)?);
            }
            "--release" => options.release = true,
            "--no-build" => options.build = false,
            "--oxydra" => options.oxydra = Some(PathBuf::from(value("--oxydra")?)),
            "--server" => options.server = Some(PathBuf::from(value("--server")?)),
            other => {
                return Err(format!(
                    "serve-load: unknown option {other} (usage: cargo xtask serve-load \
                     [--clients N] [--release] [--no-build] [--oxydra PATH] [--server PATH] \
                     [--max-connections N])"
                ));
            }
        }
    }
    Ok(options)
}

/// `cargo xtask serve-load ARGS`.
pub fn run(args: &[String]) -> Result<(), String> {
    let options = parse_args(args)?;
    let root = crate::workspace_root();
    let target = crate::bench::target_dir(&root, std::env::var_os("CARGO_TARGET_DIR"));
    let profile = if options.release { "release" } else { "debug" };
    if options.build {
        let build = |package: &str, bin: &str| {
            crate::peer_cost::build_bin(&root, package, bin, options.release)
        };
        if options.oxydra.is_none() {
            build("oxydra-cli", "oxydra")?;
        }
        if options.server.is_none() {
            build("oxydra-test-support", "scenario_server")?;
        }
    }
    let oxydra = options
        .oxydra
        .clone()
        .unwrap_or_else(|| target.join(profile).join("oxydra"));
    let server = options
        .server
        .clone()
        .unwrap_or_else(|| target.join(profile).join("scenario_server"));
    // Absolute: serve runs in the scratch directory.
    let absolute = |binary: PathBuf| {
        std::fs::canonicalize(&binary)
            .map_err(|e| format!("{}: {e} (build it, or name another)", binary.display()))
    };
    let oxydra = absolute(oxydra)?;
    let server = absolute(server)?;
    let scratch = target.join("serve-load");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(scratch.join("workspace"))
        .map_err(|e| format!("creating {}: {e}", scratch.display()))?;
    raise_file_limit();
    let mut provider = Command::new(&server)
        .arg("answer")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", server.display()))?;
    let result = crate::peer_cost::server_url(&mut provider)
        .and_then(|url| with_serve(&oxydra, &url, &scratch, &options));
    drop(provider.stdin.take());
    let _ = provider.wait();
    let _ = std::fs::remove_dir_all(&scratch);
    eprintln!("(load average: {})", load_average());
    result
}

/// Starts `oxydra serve` against the provider at `url`, loads it, and stops it.
fn with_serve(oxydra: &Path, url: &str, scratch: &Path, options: &Options) -> Result<(), String> {
    let config = scratch.join("oxydra.toml");
    std::fs::write(&config, config_text(options.max_connections))
        .map_err(|e| format!("{}: {e}", config.display()))?;
    let mut child = Command::new(oxydra)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--no-console",
            "--base-url",
            url,
        ])
        .args(["--model", "scripted", "--config"])
        .arg(&config)
        .arg("--db")
        .arg(scratch.join("runs.db"))
        .arg("--workspace")
        .arg(scratch.join("workspace"))
        .current_dir(scratch)
        .env("HOME", scratch)
        .env("XDG_CONFIG_HOME", scratch)
        .env("XDG_DATA_HOME", scratch)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", oxydra.display()))?;
    let (addr, log) = listening(&mut child);
    let result = addr.and_then(|addr| load(addr, child.id(), options.clients));
    process::stop(&mut child);
    result.map_err(|message| {
        let tail = log.lock().map(|lines| lines.join("\n")).unwrap_or_default();
        format!("{message}\noxydra serve's stderr ends:\n{tail}")
    })
}

/// The configuration: the agent, and `[serve] max_connections` when given.
fn config_text(max_connections: Option<usize>) -> String {
    match max_connections {
        Some(cap) => format!("[serve]\nmax_connections = {cap}\n{AGENT}"),
        None => AGENT.to_owned(),
    }
}

/// Reads serve's stderr on a thread until it says where it listens (30 s at most),
/// keeping its last lines for an error message.
fn listening(child: &mut Child) -> (Result<SocketAddr, String>, Arc<Mutex<Vec<String>>>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let Some(stderr) = child.stderr.take() else {
        return (Err("oxydra serve has no stderr".into()), log);
    };
    let (send, address) = channel();
    let kept = Arc::clone(&log);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let addr = rest
                    .split(['/', ' '])
                    .next()
                    .and_then(|addr| addr.parse::<SocketAddr>().ok());
                let _ = send.send(addr);
            }
            if let Ok(mut lines) = kept.lock() {
                lines.push(line);
                let excess = lines.len().saturating_sub(20);
                lines.drain(..excess);
            }
        }
    });
    let addr = match address.recv_timeout(Duration::from_secs(30)) {
        Ok(Some(addr)) => Ok(addr),
        Ok(None) => Err("oxydra serve's `listening on` line holds no address".into()),
        Err(_) => Err("oxydra serve did not say where it listens within 30 s".into()),
    };
    (addr, log)
}

/// What one client got: its latency and the answer or the error.
struct Outcome {
    latency: Duration,
    answer: Result<http::Answer, String>,
}

/// The load itself, on serve at `addr` (process `pid`).
fn load(addr: SocketAddr, pid: u32, clients: usize) -> Result<(), String> {
    // Serve starts its runtime's threads and opens the store before it listens; a
    // moment for the rest of its start (the approval sweep's first pass).
    std::thread::sleep(Duration::from_millis(300));
    let cpu_before = cpu_seconds(pid);
    let start = Arc::new(Barrier::new(clients + 1));
    let done = Arc::new(AtomicBool::new(false));
    let prober = probe(addr, Arc::clone(&start), Arc::clone(&done));
    let threads: Vec<JoinHandle<Outcome>> = (0..clients)
        .map(|_| {
            let start = Arc::clone(&start);
            std::thread::Builder::new()
                .stack_size(128 * 1024)
                .spawn(move || {
                    start.wait();
                    let sent = Instant::now();
                    let answer = http::exchange(addr, "POST", "/runs", Some(BODY));
                    Outcome {
                        latency: sent.elapsed(),
                        answer,
                    }
                })
                .map_err(|e| format!("starting a client thread: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let outcomes: Vec<Outcome> = threads
        .into_iter()
        .map(|thread| {
            thread
                .join()
                .map_err(|_| "a client thread panicked".to_owned())
        })
        .collect::<Result<_, _>>()?;
    done.store(true, Ordering::Relaxed);
    let probes = prober
        .join()
        .map_err(|_| "the prober thread panicked".to_owned())?;
    let cpu_answering = cpu_seconds(pid) - cpu_before;
    let report = Report::of(&outcomes);
    println!("{}", report.text(clients));
    match Summary::of(&probes) {
        Some(summary) => println!(
            "GET /agents meanwhile, one after another, {}",
            summary.line()
        ),
        None => println!("GET /agents meanwhile: no probe answered"),
    }
    println!(
        "server CPU while answering: {cpu_answering:.2} s; peak RSS {:.1} MiB",
        proc_status_kib(pid, "VmHWM") as f64 / 1024.0
    );
    let ended = wait_ended(addr, &report.run_ids)?;
    println!(
        "runs: {} accepted, all {} found in the store and ended: {}; server CPU in all \
         {:.2} s, peak RSS {:.1} MiB",
        report.run_ids.len(),
        report.run_ids.len(),
        ended,
        cpu_seconds(pid) - cpu_before,
        proc_status_kib(pid, "VmHWM") as f64 / 1024.0
    );
    if report.errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of {clients} requests got no answer",
            report.errors.values().sum::<usize>()
        ))
    }
}

/// `GET /agents` one after another from the barrier until `done`; the latencies of
/// those answered `200`.
fn probe(
    addr: SocketAddr,
    start: Arc<Barrier>,
    done: Arc<AtomicBool>,
) -> JoinHandle<Vec<Duration>> {
    std::thread::spawn(move || {
        start.wait();
        let mut latencies = Vec::new();
        while !done.load(Ordering::Relaxed) {
            let sent = Instant::now();
            if http::exchange(addr, "GET", "/agents", None).is_ok_and(|a| a.status == 200) {
                latencies.push(sent.elapsed());
            }
        }
        latencies
    })
}

/// Polls every run until none is `pending` or `running` (10 minutes at most); the
/// count of each final status. A run the store does not know fails.
fn wait_ended(addr: SocketAddr, ids: &[String]) -> Result<String, String> {
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut pending: Vec<&String> = ids.iter().collect();
    let mut ended: BTreeMap<String, usize> = BTreeMap::new();
    while !pending.is_empty() {
        if Instant::now() > deadline {
            return Err(format!(
                "{} runs had not ended after 10 minutes",
                pending.len()
            ));
        }
        let mut still = Vec::new();
        for id in pending {
            let answer = http::exchange(addr, "GET", &format!("/runs/{id}"), None)?;
            if answer.status != 200 {
                return Err(format!(
                    "run {id}, accepted, is not in the store: GET /runs/{id} answered {} {}",
                    answer.status, answer.body
                ));
            }
            match http::run_status(&answer.body).as_deref() {
                Some("pending" | "running") => still.push(id),
                Some(status) => *ended.entry(status.to_owned()).or_insert(0) += 1,
                None => return Err(format!("run {id}: no status in {}", answer.body)),
            }
        }
        pending = still;
        if !pending.is_empty() {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    Ok(ended
        .iter()
        .map(|(status, count)| format!("{count} {status}"))
        .collect::<Vec<_>>()
        .join(", "))
}
