//! The configuration a new user meets first, through the real binary: `oxydra init`
//! writes the provider `run` uses now, `--print-config` prints (and loads back) before
//! any key is set, our own help text is shown as written, and a model without a price
//! says its cost is unknown.

use crate::common;

use common::{Sandbox, stderr, stdout};
use oxydra_test_support::{MockServer, openai};

/// The `[provider]` table of a printed configuration.
fn printed_provider(text: &str) -> toml::Table {
    let table: toml::Table = text
        .parse()
        .unwrap_or_else(|error| panic!("{error}\n{text}"));
    table["provider"].as_table().unwrap().clone()
}

#[test]
fn print_config_prints_without_a_key_and_loads_back_for_every_kind() {
    let sandbox = Sandbox::new();
    for kind in ["openai", "anthropic", "gemini", "ollama", "local"] {
        let mut command = sandbox.command();
        command.args(["run", "--print-config", "--provider", kind]);
        if kind == "local" {
            command.args(["--model", "/models/small.gguf"]);
        }
        let first = command.output().unwrap();
        assert_eq!(first.status.code(), Some(0), "{kind}: {}", stderr(&first));
        let text = stdout(&first);
        let provider = printed_provider(&text);
        assert_eq!(provider["kind"].as_str(), Some(kind), "{text}");
        if kind == "local" {
            assert!(provider.get("base_url").is_none(), "{text}");
            assert!(!text.contains("in-process"), "{text}");
        }
        if let Some(var) = provider.get("api_key_env").and_then(toml::Value::as_str) {
            assert!(text.contains(&format!("{var} is not set")), "{text}");
        }

        // Fed back as the configuration, it loads and says the same.
        let file = sandbox.path().join(format!("printed-{kind}.toml"));
        std::fs::write(&file, &text).unwrap();
        let again = sandbox
            .command()
            .args(["run", "--print-config", "--config"])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(again.status.code(), Some(0), "{kind}: {}", stderr(&again));
        assert_eq!(printed_provider(&stdout(&again)), provider, "{kind}");
    }
}

#[test]
fn the_no_provider_message_is_shown_as_written() {
    let sandbox = Sandbox::new();
    let output = sandbox.command().args(["run", "hi"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("no provider configured"), "{message}");
    assert!(
        message.contains("export OPENAI_API_KEY=sk-..."),
        "{message}"
    );
    assert!(
        message.contains("export OXYDRA_LOCAL_MODEL=PATH.gguf"),
        "{message}"
    );
    assert!(!message.contains("[REDACTED]"), "{message}");
}

#[test]
fn init_writes_the_provider_run_would_use_now() {
    let sandbox = Sandbox::new();
    let written = sandbox.path().join("config/oxydra/config.toml");
    let print = |envs: &[(&str, &str)]| {
        let output = sandbox
            .command()
            .args(["run", "--print-config"])
            .envs(envs.iter().copied())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        printed_provider(&stdout(&output))
    };

    // A working local set-up stays local.
    let local = [("OXYDRA_LOCAL_MODEL", "/models/small.gguf")];
    assert_eq!(print(&local)["kind"].as_str(), Some("local"));
    let init = sandbox.command().arg("init").envs(local).output().unwrap();
    assert_eq!(init.status.code(), Some(0), "{}", stderr(&init));
    let text = std::fs::read_to_string(&written).unwrap();
    for kind in ["openai", "anthropic", "gemini", "ollama", "local"] {
        assert!(text.contains(&format!("\"{kind}\"")), "{kind}: {text}");
    }
    let provider = print(&[]);
    assert_eq!(provider["kind"].as_str(), Some("local"), "{text}");
    assert_eq!(provider["model"].as_str(), Some("/models/small.gguf"));

    // `--force` keeps what run uses now: the file's local model, even with a key set.
    let gemini = [("GEMINI_API_KEY", "AIza-test-key-0123456789")];
    let init = sandbox
        .command()
        .args(["init", "--force"])
        .envs(gemini)
        .output()
        .unwrap();
    assert_eq!(init.status.code(), Some(0), "{}", stderr(&init));
    assert_eq!(print(&gemini)["kind"].as_str(), Some("local"));

    // Without a file, a Gemini key gives Gemini.
    std::fs::remove_file(&written).unwrap();
    let init = sandbox.command().arg("init").envs(gemini).output().unwrap();
    assert_eq!(init.status.code(), Some(0), "{}", stderr(&init));
    let provider = print(&gemini);
    assert_eq!(provider["kind"].as_str(), Some("gemini"));
    assert_eq!(provider["api_key_env"].as_str(), Some("GEMINI_API_KEY"));

    // Nothing at hand: no provider is written, and run says how to get one (not that
    // OPENAI_API_KEY is missing).
    std::fs::remove_file(&written).unwrap();
    let init = sandbox.command().arg("init").output().unwrap();
    assert_eq!(init.status.code(), Some(0), "{}", stderr(&init));
    let output = sandbox.command().args(["run", "hi"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("no provider configured"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn an_unpriced_model_says_cost_unknown_and_refuses_max_cost() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("hi there")]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--model", "my-own-model"], "hello");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "hi there");
    let err = stderr(&output);
    assert!(err.contains("· cost unknown ·"), "{err}");
    assert!(!err.contains("$0"), "{err}");
    assert!(!err.contains("WARN"), "{err}");

    // A cost budget cannot be counted: a usage error naming the flag, before any call.
    let output = sandbox.run_openai(
        &server.openai_url(),
        &["--model", "my-own-model", "--max-cost", "1"],
        "hello",
    );
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("--max-cost"), "{err}");
    assert!(err.contains("[pricing.\"my-own-model\"]"), "{err}");
    assert_eq!(server.requests().len(), 1);

    // A priced model shows its cost.
    let server = MockServer::start(vec![openai::text("hi there")]).unwrap();
    let output = sandbox.run_openai(&server.openai_url(), &["--model", "gpt-4o"], "hello");
    assert!(stderr(&output).contains("· $0.00"), "{}", stderr(&output));
}
