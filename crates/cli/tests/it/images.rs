//! Images and PDFs from the user through the real binary: `run --image FILE` (and
//! `--attach`), `@path` in `chat`, `sessions show` naming the parts, the JSONL
//! `attachments` line; every bad file is an error naming the flag and the file that
//! sends and stores nothing.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Sandbox, json_lines, output_with_stdin, stderr, stdout};
use oxydra::types::ContentPart;
use oxydra_test_support::{MockServer, Reply, anthropic, openai};
use serde_json::Value;

/// A PNG's signature and the start of its header: what the sniffer reads.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";
const PDF: &[u8] = b"%PDF-1.7\n1 0 obj <<>> endobj\n%%EOF\n";

/// `bytes` in base64, as the wire carries them.
fn b64(bytes: &[u8]) -> String {
    ContentPart::image("image/png", bytes)
        .base64_data()
        .unwrap()
        .to_owned()
}

fn strict_openai(replies: Vec<Reply>) -> MockServer {
    MockServer::builder()
        .strict_openai()
        .replies(replies)
        .start()
        .unwrap()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The stored sessions, as `sessions list --output jsonl` prints them.
fn stored_sessions(sandbox: &Sandbox) -> Vec<Value> {
    if !sandbox.db.exists() {
        return Vec::new();
    }
    let output = sandbox.sessions(&["list", "--all", "--output", "jsonl"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    json_lines(&output)
}

#[test]
fn an_image_and_a_pdf_reach_openai_and_are_stored_described() {
    let sandbox = Sandbox::new();
    let png = write(sandbox.path(), "shot.png", PNG);
    let pdf = write(sandbox.path(), "report.pdf", PDF);
    let server = strict_openai(vec![openai::text("a tiny image and a report")]);
    let output = sandbox.run_openai(
        &server.openai_url(),
        &[
            "--output",
            "jsonl",
            "--image",
            png.to_str().unwrap(),
            "--attach",
            pdf.to_str().unwrap(),
        ],
        "what are these?",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    assert_eq!(events[0]["type"], "attachments", "{events:?}");
    let parts = events[0]["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0]["kind"], "image");
    assert_eq!(parts[0]["media_type"], "image/png");
    assert_eq!(parts[0]["bytes"], PNG.len());
    assert_eq!(parts[0]["file"], "shot.png");
    assert_eq!(parts[1]["kind"], "document");
    assert_eq!(parts[1]["file"], "report.pdf");
    assert_eq!(events.last().unwrap()["type"], "final");

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let user = &requests[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "user")
        .unwrap()["content"];
    let kinds: Vec<&str> = user
        .as_array()
        .unwrap()
        .iter()
        .map(|part| part["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "image_url", "file"]);
    assert_eq!(
        user[1]["image_url"]["url"],
        format!("data:image/png;base64,{}", b64(PNG))
    );
    assert_eq!(user[2]["file"]["filename"], "report.pdf");

    // `sessions show` names the parts and never prints their bytes.
    let session = events.last().unwrap()["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let shown = sandbox.sessions(&["show", &session]);
    let text = stdout(&shown);
    let described = format!("[image (image/png, {} B)]", PNG.len());
    assert!(text.contains(&described), "{text}");
    assert!(
        text.contains("[document report.pdf (application/pdf,"),
        "{text}"
    );
    assert!(!text.contains(&b64(PNG)), "{text}");
    let shown = sandbox.sessions(&["show", &session, "--output", "jsonl"]);
    let lines = json_lines(&shown);
    assert_eq!(lines[0]["parts"][0]["kind"], "image");
    assert_eq!(lines[0]["parts"][1]["bytes"], PDF.len());
    assert!(!stdout(&shown).contains(&b64(PDF)));
}

#[test]
fn an_image_reaches_anthropic_as_a_base64_block_and_text_output_says_so() {
    let sandbox = Sandbox::new();
    let png = write(sandbox.path(), "shot.png", PNG);
    let server = MockServer::builder()
        .only("POST", anthropic::MESSAGES_PATH)
        .strict_anthropic()
        .replies(vec![anthropic::text("a pixel")])
        .start()
        .unwrap();
    let output = sandbox
        .stored_command("run")
        .env("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef")
        .args(["--provider", "anthropic", "--base-url", &server.url("")])
        .args(["--model", "claude-haiku-4-5", "--image"])
        .arg(&png)
        .arg("what is it?")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!(
            "attached shot.png: image (image/png, {} B)",
            PNG.len()
        )),
        "{}",
        stderr(&output)
    );
    let body = &server.requests()[0].body;
    let content = body["messages"][0]["content"].as_array().unwrap();
    let image = content
        .iter()
        .find(|block| block["type"] == "image")
        .unwrap();
    assert_eq!(image["source"]["media_type"], "image/png");
    assert_eq!(image["source"]["data"], b64(PNG));
}

/// Runs `run --image FILE…` with each file, expecting a usage error naming `--image`
/// and `name`, no request and nothing stored.
fn assert_refused(sandbox: &Sandbox, files: &[&Path], name: &str, reason: &str) {
    let server = strict_openai(vec![openai::text("unused")]);
    let mut command = sandbox.stored_command("run");
    command.args(["--base-url", &server.openai_url()]);
    for file in files {
        command.arg("--image").arg(file);
    }
    let output = command.arg("look").output().unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{name}: {err}");
    assert!(err.contains("--image"), "{name}: {err}");
    assert!(err.contains(name), "{name}: {err}");
    assert!(err.contains(reason), "{name}: {err}");
    assert!(server.requests().is_empty(), "{name}: a request was sent");
    assert!(
        stored_sessions(sandbox).is_empty(),
        "{name}: a session was stored"
    );
}

#[test]
fn bad_files_are_refused_naming_the_flag_and_the_file() {
    let sandbox = Sandbox::new();
    let dir = sandbox.path();
    let missing = dir.join("missing.png");
    assert_refused(&sandbox, &[&missing], "missing.png", "cannot read it");
    let text = write(dir, "liar.png", b"this is text, not a PNG");
    assert_refused(&sandbox, &[&text], "liar.png", "not an image or a PDF");
    let svg = write(
        dir,
        "logo.svg",
        b"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1\" height=\"1\"/>",
    );
    assert_refused(&sandbox, &[&svg], "logo.svg", "SVG is not supported");
    let mut bmp = b"BM".to_vec();
    bmp.extend([0u8; 64]);
    // Named .png: the bytes decide, and they say BMP.
    let bmp = write(dir, "old.png", &bmp);
    assert_refused(&sandbox, &[&bmp], "old.png", "BMP is not supported");
    // One byte over the cap (a sparse file: no 20 MiB written).
    let big = write(dir, "huge.png", PNG);
    std::fs::File::options()
        .write(true)
        .open(&big)
        .unwrap()
        .set_len(20 * 1024 * 1024 + 1)
        .unwrap();
    assert_refused(&sandbox, &[&big], "huge.png", "20 MiB");
    let subdir = dir.join("ws");
    assert_refused(&sandbox, &[&subdir], "ws", "not a regular file");
    let png = write(dir, "ok.png", PNG);
    let many: Vec<&Path> = std::iter::repeat_n(png.as_path(), 17).collect();
    assert_refused(&sandbox, &many, "17 files", "at most 16");
    // A good file beside a bad one sends nothing either.
    assert_refused(&sandbox, &[&png, &text], "liar.png", "not an image");
}

#[test]
fn a_bad_file_in_jsonl_mode_ends_with_one_config_error_event() {
    let sandbox = Sandbox::new();
    let text = write(sandbox.path(), "liar.png", b"plain text");
    let server = strict_openai(vec![openai::text("unused")]);
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--output", "jsonl", "--image", text.to_str().unwrap()],
        "look",
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let events = json_lines(&output);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "error");
    assert_eq!(events[0]["kind"], "config");
    assert!(events[0]["message"].as_str().unwrap().contains("liar.png"));
    assert!(server.requests().is_empty());
}

#[test]
fn chat_attaches_workspace_media_named_with_at_and_refuses_escapes() {
    let sandbox = Sandbox::new();
    write(&sandbox.workspace, "shot.png", PNG);
    write(
        &sandbox.workspace,
        "notes.png",
        b"a text file with an image's name",
    );
    write(sandbox.path(), "outside.png", PNG);
    let server = strict_openai(vec![openai::text("a pixel"), openai::text("text only")]);
    let command = sandbox.oxydra_command(&server, "chat");
    let output = output_with_stdin(
        command,
        b"describe @shot.png please\nis @notes.png an image?\nsee @../outside.png\n",
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the escaping line was not sent");
    let first = requests[0].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|message| message["role"] == "user")
        .unwrap()
        .clone();
    assert_eq!(first["content"][0]["text"], "describe @shot.png please");
    assert_eq!(first["content"][1]["type"], "image_url");
    // The second line's @token is no image but text: its contents follow the line.
    let second = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|message| message["role"] == "user")
        .unwrap()
        .clone();
    assert_eq!(
        second["content"],
        "is @notes.png an image?\n\n--- @notes.png ---\na text file with an image's name\n\
         --- end of @notes.png ---"
    );
    let events = json_lines(&output);
    let attachments: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "attachments")
        .collect();
    assert_eq!(attachments.len(), 1, "{events:?}");
    assert_eq!(attachments[0]["parts"][0]["file"], "shot.png");
    let refused = events
        .iter()
        .find(|event| event["type"] == "error")
        .unwrap();
    assert_eq!(refused["kind"], "config");
    let message = refused["message"].as_str().unwrap();
    assert!(message.contains("@../outside.png"), "{message}");
    assert!(message.contains("outside the workspace"), "{message}");
}

/// Runs `run --image FILE look`, which must end within ten seconds (it must not wait
/// at all), and returns its exit code and stderr; fails naming the file if it hangs.
fn run_with_image_in_time(sandbox: &Sandbox, file: &Path) -> (Option<i32>, String) {
    let server = strict_openai(vec![openai::text("unused")]);
    let mut command = sandbox.stored_command("run");
    command
        .args(["--base-url", &server.openai_url()])
        .arg("--image")
        .arg(file)
        .arg("look");
    let (mut child, _out, err) = common::spawn_captured(command);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "`--image {}` hangs: {}",
            file.display(),
            err.text()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(server.requests().is_empty(), "a request was sent");
    (status.code(), err.all())
}

#[test]
fn a_fifo_or_a_device_given_as_image_fails_at_once_naming_it() {
    let sandbox = Sandbox::new();
    let fifo = sandbox.path().join("pipe.png");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // No writer ever opens the FIFO: opening it to read would wait forever.
    for (file, what) in [
        (fifo.as_path(), "a FIFO (named pipe)"),
        (Path::new("/dev/zero"), "a character device"),
        (sandbox.workspace.as_path(), "a directory"),
    ] {
        let (code, err) = run_with_image_in_time(&sandbox, file);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("--image"), "{err}");
        assert!(err.contains(&file.display().to_string()), "{err}");
        assert!(
            err.contains(&format!("not a regular file but {what}")),
            "{err}"
        );
    }
}
