//! The peer of `cargo xtask tasks --peer`: llama-cpp-python's OpenAI-compatible server
//! (`python -m llama_cpp.server`, chat format `chatml-function-calling`) running the
//! same GGUF, which the suite then drives through oxydra's `openai` provider.
//!
//! It comes from `scripts/install-peer-server.sh` (a virtualenv at
//! `target/peer-venv`, or `$OXYDRA_PEER_VENV`); it is never part of `cargo xtask ci`.
//! The server listens on a free loopback port, writes its log to
//! `target/peer-server.log`, and is killed when the [`PeerServer`] is dropped.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to load the model and answer.
const READY_WITHIN: Duration = Duration::from_secs(180);

/// A running peer server.
pub struct PeerServer {
    child: Child,
    /// Its OpenAI-compatible base URL (`http://127.0.0.1:PORT/v1`).
    pub base_url: String,
}

/// The virtualenv the install script made.
fn venv(target: &Path) -> PathBuf {
    std::env::var_os("OXYDRA_PEER_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("peer-venv"))
}

impl PeerServer {
    /// Starts the server on `model` with `threads` threads and waits until it answers.
    pub fn start(target: &Path, model: &Path, threads: usize) -> Result<Self, String> {
        let python = venv(target).join("bin/python");
        if !python.is_file() {
            return Err(format!(
                "{} is missing: install the peer server with scripts/install-peer-server.sh",
                python.display()
            ));
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let log_path = target.join("peer-server.log");
        let log = File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let err_log = log
            .try_clone()
            .map_err(|e| format!("{}: {e}", log_path.display()))?;
        let child = Command::new(&python)
            .args(["-m", "llama_cpp.server", "--model"])
            .arg(model)
            .args(["--chat_format", "chatml-function-calling"])
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--n_threads", &threads.to_string(), "--n_ctx", "8192"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err_log)
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", python.display()))?;
        let mut server = Self {
            child,
            base_url: format!("http://127.0.0.1:{port}/v1"),
        };
        let started = Instant::now();
        while !answers(port) {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!(
                    "the peer server exited ({status}); see {}",
                    log_path.display()
                ));
            }
            if started.elapsed() > READY_WITHIN {
                return Err(format!(
                    "the peer server did not answer within {} s; see {}",
                    READY_WITHIN.as_secs(),
                    log_path.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        eprintln!(
            "==> peer: llama-cpp-python server at {} (log: {})",
            server.base_url,
            log_path.display()
        );
        Ok(server)
    }
}

impl Drop for PeerServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `GET /v1/models` on `port` answers 200.
fn answers(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    if stream
        .write_all(b"GET /v1/models HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.ends_with(b" 200")
}
