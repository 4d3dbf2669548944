//! The local model through the `oxydra` binary: every way out of a run that is
//! decoding (the turn timeout, SIGTERM, Ctrl-C twice) ends the process by `exit`,
//! never by a signal (it used to die with SIGSEGV when the decode thread still ran
//! during the process's exit); a chat template that loops cannot hold a run; the
//! seed of `[provider.sampling]` makes an answer reproducible.

use crate::common;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus};

use common::{Sandbox, spawn_captured, stderr, stdout};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use oxydra_test_support::gguf_metadata::{MetaValue, copy_with_metadata};
use oxydra_test_support::test_model;

/// A prompt a small model answers at length.
const LONG_PROMPT: &str = "Write a very long story about a dragon and a knight, in twenty chapters, \
                           with a title for each chapter.";

/// `oxydra run --provider local --model MODEL` in `sandbox`, with a config that lets
/// the model talk for long (no output cap to end it first).
fn local_run(sandbox: &Sandbox, model: &Path, timeout_secs: u32) -> Command {
    let config = sandbox.path().join("long.toml");
    std::fs::write(&config, "[provider.sampling]\nmax_tokens = 100000\n").unwrap();
    let mut command = sandbox.stored_command("run");
    command
        .arg("--config")
        .arg(&config)
        .args(["--provider", "local", "--model"])
        .arg(model)
        .args(["--approve", "deny", "--output", "jsonl"])
        .args(["--turn-timeout", &timeout_secs.to_string()]);
    command
}

/// Waits until the run is in its provider call (the prompt being decoded, or the
/// answer), then a moment more so that llama.cpp is computing.
fn wait_for_decoding(out: &common::Captured) {
    out.wait_for("provider_call");
    std::thread::sleep(std::time::Duration::from_secs(1));
}

fn describe(status: ExitStatus, output: &str) -> String {
    format!(
        "code {:?}, signal {:?}\n{output}",
        status.code(),
        status.signal()
    )
}

#[test]
fn fifty_turn_timeouts_during_decoding_all_exit_cleanly() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    const RUNS: usize = 50;
    const PARALLEL: usize = 2;
    let sandboxes: Vec<Sandbox> = (0..PARALLEL).map(|_| Sandbox::new()).collect();
    let mut finished = 0;
    while finished < RUNS {
        let children: Vec<_> = sandboxes
            .iter()
            .map(|sandbox| {
                local_run(sandbox, &model, 1)
                    .arg(LONG_PROMPT)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let output = child.wait_with_output().unwrap();
            let text = format!("stderr: {}\nstdout: {}", stderr(&output), stdout(&output));
            assert_eq!(
                output.status.signal(),
                None,
                "run {finished} died by a signal: {}",
                describe(output.status, &text)
            );
            assert_eq!(
                output.status.code(),
                Some(3),
                "run {finished}: {}",
                describe(output.status, &text)
            );
            finished += 1;
        }
    }
}

#[test]
fn sigterm_during_decoding_exits_with_143_not_by_the_signal() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let sandbox = Sandbox::new();
    let mut command = local_run(&sandbox, &model, 600);
    command.arg(LONG_PROMPT);
    let (mut child, out, err) = spawn_captured(command);
    wait_for_decoding(&out);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    let text = format!("stderr: {}\nstdout: {}", err.all(), out.all());
    assert_eq!(status.signal(), None, "{}", describe(status, &text));
    assert_eq!(status.code(), Some(143), "{}", describe(status, &text));
}

#[test]
fn ctrl_c_twice_during_decoding_exits_with_130_not_by_the_signal() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let sandbox = Sandbox::new();
    let mut command = local_run(&sandbox, &model, 600);
    command.arg(LONG_PROMPT);
    let (mut child, out, err) = spawn_captured(command);
    wait_for_decoding(&out);
    let pid = Pid::from_raw(child.id() as i32);
    kill(pid, Signal::SIGINT).unwrap();
    // The second press may find the process already on its way out after the
    // first: that is fine, it must still not die by a signal.
    let _ = kill(pid, Signal::SIGINT);
    let status = child.wait().unwrap();
    let text = format!("stderr: {}\nstdout: {}", err.all(), out.all());
    assert_eq!(status.signal(), None, "{}", describe(status, &text));
    assert_eq!(status.code(), Some(130), "{}", describe(status, &text));
}

#[test]
fn a_model_whose_chat_template_loops_cannot_hold_a_run() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let sandbox = Sandbox::new();
    let copy = sandbox.path().join("looping.gguf");
    let looping =
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}";
    copy_with_metadata(
        &model,
        &copy,
        &[("tokenizer.chat_template", MetaValue::Str(looping.into()))],
    )
    .unwrap();
    // Before the fuel limit this run never returned, past its turn timeout and a
    // first Ctrl-C.
    let output = local_run(&sandbox, &copy, 1).arg("hi").output().unwrap();
    let text = format!("stderr: {}\nstdout: {}", stderr(&output), stdout(&output));
    assert_eq!(output.status.signal(), None, "{text}");
    assert!(
        matches!(output.status.code(), Some(1 | 3)),
        "{}",
        describe(output.status, &text)
    );
    if output.status.code() == Some(1) {
        assert!(stderr(&output).contains("ran out of fuel"), "{text}");
    }
}

#[test]
fn the_same_seed_gives_the_same_answer() {
    let Some(model) = test_model::or_skip() else {
        return;
    };
    let sandbox = Sandbox::new();
    let config = sandbox.path().join("seeded.toml");
    std::fs::write(
        &config,
        "[provider.sampling]\nseed = 42\ntemperature = 1.0\nmax_tokens = 24\n",
    )
    .unwrap();
    // A text answer, not the small model's required first call: the grammar forces most
    // tokens of a call (`<tool_call>` and the tool's name), so equal calls would say
    // little of the seed; and without the tools the prompt is ~60 tokens instead of
    // ~580, a third of the run's time on a loaded machine.
    let answer = || {
        let output = sandbox
            .stored_command("run")
            .arg("--config")
            .arg(&config)
            .args(["--provider", "local", "--model"])
            .arg(&model)
            .args(["--approve", "deny", "--turn-timeout", "600"])
            .args(["--tool-choice", "none"])
            .arg("Name three colours.")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            describe(output.status, &stderr(&output))
        );
        stdout(&output)
    };
    let first = answer();
    assert!(!first.trim().is_empty());
    assert_eq!(first, answer());
}
