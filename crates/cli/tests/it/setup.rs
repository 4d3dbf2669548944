//! Getting started: `oxydra init`, `--print-config` with and without a provider, and
//! the help texts.

use crate::common;

use common::{Sandbox, stderr, stdout};

/// `oxydra run --print-config --config FILE` (or `chat`), optionally with an OpenAI key.
fn print_config(sandbox: &Sandbox, subcommand: &str, config: Option<&str>, key: bool) -> String {
    let mut command = sandbox.command();
    command.arg(subcommand).arg("--print-config");
    if let Some(config) = config {
        command.args(["--config", config]);
    }
    if key {
        command.env("OPENAI_API_KEY", "sk-proj-abcdefghijklmnop1234");
    }
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    stdout(&output)
}

#[test]
fn init_writes_a_commented_config_that_loads_back() {
    let sandbox = Sandbox::new();
    let output = sandbox.command().arg("init").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let path = sandbox.path().join("config/oxydra/config.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("# max_turns = 8"), "{text}");
    assert!(text.contains("api_key_env = \"OPENAI_API_KEY\""), "{text}");
    assert!(stderr(&output).contains("wrote "), "{}", stderr(&output));

    // The user config is found without --config, and a run of it uses its provider.
    let printed = print_config(&sandbox, "run", None, true);
    assert!(printed.contains(&path.display().to_string()), "{printed}");
    assert!(printed.contains("model = \"gpt-4o-mini\""), "{printed}");

    let again = sandbox.command().arg("init").output().unwrap();
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    assert!(stderr(&again).contains("--force"), "{}", stderr(&again));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        text,
        "not overwritten"
    );
    let forced = sandbox
        .command()
        .args(["init", "--force"])
        .output()
        .unwrap();
    assert_eq!(forced.status.code(), Some(0), "{}", stderr(&forced));
}

#[test]
fn init_follows_an_anthropic_key() {
    let sandbox = Sandbox::new();
    let file = sandbox.path().join("a.toml");
    let output = sandbox
        .command()
        .arg("init")
        .arg(&file)
        .env("ANTHROPIC_API_KEY", "sk-ant-x")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("kind = \"anthropic\""), "{text}");
}

#[test]
fn print_config_works_without_a_provider_in_run_and_chat_and_loads_back() {
    let sandbox = Sandbox::new();
    for subcommand in ["run", "chat"] {
        for key in [false, true] {
            let printed = print_config(&sandbox, subcommand, None, key);
            if key {
                assert!(printed.contains("# api key: sk-****1234"), "{printed}");
                assert!(!printed.contains("abcdefghijklmnop"), "{printed}");
            } else {
                assert!(printed.contains("no provider configured"), "{printed}");
            }
            let file = sandbox.path().join("printed.toml");
            std::fs::write(&file, &printed).unwrap();
            let again = print_config(&sandbox, subcommand, Some(file.to_str().unwrap()), key);
            assert!(again.contains("[runtime]"), "{again}");
        }
    }
}

#[test]
fn help_texts_name_no_document_and_describe_their_own_output() {
    let sandbox = Sandbox::new();
    let help = |args: &[&str]| {
        let output = sandbox.command().args(args).arg("--help").output().unwrap();
        assert_eq!(output.status.code(), Some(0));
        stdout(&output)
    };
    for args in [
        &["run"][..],
        &["chat"],
        &["sessions", "list", "--all"],
        &["sessions", "show"],
        &["sessions", "delete"],
        &["agents", "list"],
        &["mcp", "list"],
        &["serve"],
        &["init"],
        &["trust"],
        &["scrub"],
    ] {
        let text = help(args);
        assert!(!text.contains(".md"), "{args:?}: {text}");
    }
    assert!(help(&["run"]).contains("the answer to stdout"));
    assert!(!help(&["sessions", "list", "--all"]).contains("runtime"));
    assert!(help(&["sessions", "list", "--all"]).contains("listing"));
}
