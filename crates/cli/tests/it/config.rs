//! Configuration errors, `--print-config`, and `oxydra scrub`, through the real binary.

use crate::common;

use common::{Sandbox, output_with_stdin, stderr, stdout};

fn run_with_config(sandbox: &Sandbox, toml: &str) -> std::process::Output {
    let path = sandbox.path().join("oxydra.toml");
    std::fs::write(&path, toml).unwrap();
    let mut command = sandbox.command();
    command.args(["run", "--base-url", "http://127.0.0.1:9/v1", "hello"]);
    command.output().unwrap()
}

#[test]
fn unknown_key_names_the_file_the_table_and_the_known_keys() {
    let sandbox = Sandbox::new();
    let output = run_with_config(&sandbox, "[runtime]\nmax_turn = 3\n");
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    let file = sandbox.path().join("oxydra.toml");
    assert!(
        err.starts_with(&format!(
            "error: {}: unknown key `max_turn` in [runtime]",
            file.display()
        )),
        "{err}"
    );
    assert!(err.contains("expected one of max_turns, max_cost"), "{err}");
}

#[test]
fn wrong_type_names_the_key_and_the_types() {
    let sandbox = Sandbox::new();
    let output = run_with_config(&sandbox, "[runtime]\nmax_turns = \"eight\"\n");
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(err.contains("oxydra.toml"), "{err}");
    assert!(
        err.contains("invalid type for runtime.max_turns: expected an integer, found a string"),
        "{err}"
    );
}

#[test]
fn missing_config_file_is_named() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.command();
    command.args(["run", "--config", "nowhere.toml", "hello"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("nowhere.toml: configuration file not found"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn no_provider_says_how_to_configure_one() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.command();
    command.args(["run", "hello"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(err.contains("no provider configured"), "{err}");
    assert!(err.contains("OPENAI_API_KEY"), "{err}");
    assert!(err.contains("ANTHROPIC_API_KEY"), "{err}");
    assert!(err.contains("--base-url"), "{err}");
}

#[test]
fn bad_flag_values_are_usage_errors() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.command();
    command.args(["run", "--max-turns", "lots", "hello"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--max-turns"));
    let mut command = sandbox.command();
    command.args(["run", "--base-url", "localhost:11434", "hello"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--base-url"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn user_config_dir_file_is_used_and_print_config_masks_secrets() {
    let sandbox = Sandbox::new();
    let dir = sandbox.path().join("config").join("oxydra");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "[provider]\nmodel = \"from-user-config\"\n[runtime]\nmax_turns = 5\n[memory]\ndb = \"store/o.db\"\n",
    )
    .unwrap();
    let mut command = sandbox.command();
    command
        .env("OPENAI_API_KEY", "sk-proj-abcdefghijklmnopqrstuvwx9876")
        .args(["run", "--print-config", "--max-cost", "0.25"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("model = \"from-user-config\""), "{text}");
    assert!(text.contains("max_turns = 5"), "{text}");
    assert!(text.contains("max_cost = 0.25"), "{text}");
    assert!(
        text.contains("# api key: sk-****9876 (from OPENAI_API_KEY)"),
        "{text}"
    );
    assert!(!text.contains("abcdefghijkl"), "{text}");
    // memory.db is relative to the config file.
    assert!(
        text.contains(&dir.join("store/o.db").display().to_string()),
        "{text}"
    );
    // The printed configuration is itself valid TOML.
    text.parse::<toml::Table>().unwrap();
}

#[test]
fn scrub_redacts_stdin_and_reports_ranges() {
    let sandbox = Sandbox::new();
    let input = "host=db1\npassword: \"Xk9#mQ2$vL7pR4wZ8nB3\"\n";
    for json in [false, true] {
        let mut command = sandbox.command();
        command.arg("scrub");
        if json {
            command.arg("--json");
        }
        let output = output_with_stdin(command, input.as_bytes());
        assert_eq!(output.status.code(), Some(0));
        let text = stdout(&output);
        assert!(!text.contains("Xk9#mQ2$vL7pR4wZ8nB3"), "{text}");
        if json {
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            let redaction = &value["redactions"][0];
            let (start, end) = (
                redaction["start"].as_u64().unwrap() as usize,
                redaction["end"].as_u64().unwrap() as usize,
            );
            assert!(input[start..end].contains("Xk9#mQ2"), "{value}");
            assert!(value["text"].as_str().unwrap().starts_with("host=db1\n"));
        } else {
            assert!(text.starts_with("host=db1\n"), "{text}");
        }
    }
    let mut command = sandbox.command();
    command.args(["scrub", "missing.txt"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("missing.txt"));
}

#[test]
fn scrub_takes_formats_outside_every_provider_list_and_keeps_model_api_ids() {
    // A seed phrase, a network device's secrets, a prefixed hex token past an id's
    // 128 bits and a Kerberos hash, none of them a provider key format; then the ids
    // a model API prints, which must stay readable.
    let secrets = [
        "legal winner thank year wave sausage worth useful legal winner thank yellow",
        "0822455D0A16",
        "S3cretCommunity",
        "sbp_08414cedf15b7d3a53ce954db0b2ec90f4248ba0",
        "$krb5asrep$23$ada@corp.example:3e156ada591263b8aab0965f5aebd837$007497cb51b6c8116d6407a782ea0e1c5402b17db7afa6b0",
    ];
    let ids = [
        "ci_68c3509faff0819e96f6d45e6faf78490f2d670b80edc507",
        "cntr_68c3509aa0348191ad0bfefe24878dbb0deaa35a4e39052e",
        "ses_01a234aa808150d28dcd18a1074a0000",
    ];
    let input = format!(
        "\"mnemonic\": \"{}\"\nline vty 0 4\n password 7 {}\nsnmp-server community {} RW\n\
         SUPABASE={}\n{}\ncall {} in {} for {}\n",
        secrets[0], secrets[1], secrets[2], secrets[3], secrets[4], ids[0], ids[1], ids[2]
    );
    let sandbox = Sandbox::new();
    let output = output_with_stdin(
        {
            let mut c = sandbox.command();
            c.arg("scrub");
            c
        },
        input.as_bytes(),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    for secret in secrets {
        assert!(!text.contains(secret), "{secret}: {text}");
    }
    for id in ids {
        assert!(text.contains(id), "{id}: {text}");
    }
}

#[test]
fn scrub_is_byte_exact_outside_its_redactions() {
    let sandbox = Sandbox::new();
    // 2,000 bytes of every value (came out as 3,613 when decoded lossily), then Latin-1
    // text around a secret, whose offsets must count the input's bytes.
    let mut input: Vec<u8> = (0..2000_u32).map(|i| (i * 37 % 256) as u8).collect();
    input.extend_from_slice(b"\ncaf\xe9 cr\xe8me\npassword: \"Xk9#mQ2$vL7pR4wZ8nB3\"\n\xe9\n");
    let output = output_with_stdin(
        {
            let mut c = sandbox.command();
            c.arg("scrub");
            c
        },
        &input,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let secret = b"Xk9#mQ2$vL7pR4wZ8nB3";
    assert!(!output.stdout.windows(secret.len()).any(|w| w == secret));
    let at = input
        .windows(secret.len())
        .position(|w| w == secret)
        .unwrap();
    assert_eq!(
        output.stdout[..at],
        input[..at],
        "bytes before the secret changed"
    );
    assert!(output.stdout.ends_with(b"\"\n\xe9\n"));

    let output = output_with_stdin(
        {
            let mut c = sandbox.command();
            c.args(["scrub", "--json"]);
            c
        },
        &input,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let redaction = &value["redactions"][0];
    let (start, end) = (
        redaction["start"].as_u64().unwrap() as usize,
        redaction["end"].as_u64().unwrap() as usize,
    );
    assert!(start >= at - 1 && end <= at + secret.len() + 1, "{value}");
    assert!(
        input[start..end].windows(4).any(|w| w == b"Xk9#"),
        "{value}"
    );
    assert!(
        value["base64"].is_string(),
        "non-UTF-8 output is given exactly: {value}"
    );
}

#[test]
fn scrub_into_a_closed_pipe_exits_quietly() {
    let sandbox = Sandbox::new();
    let big = "line of harmless text\n".repeat(200_000);
    let path = sandbox.path().join("big.log");
    std::fs::write(&path, &big).unwrap();
    let mut child = sandbox
        .command()
        .arg("scrub")
        .arg(&path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read one line, then hang up, as `| head -1` does.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0_u8; 22];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    drop(stdout);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stderr(&output), "", "a closed pipe is not an error");
}

#[test]
fn print_config_masks_the_secrets_of_mcp_servers() {
    let sandbox = Sandbox::new();
    sandbox.write_trusted_config(
        "[[mcp_servers]]\nname = \"gh\"\ncommand = \"github-mcp\"\n\
         args = [\"--token=ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\"]\n\
         [mcp_servers.env]\nGITHUB_TOKEN = \"ghp_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210\"\n\
         [[mcp_servers]]\nname = \"remote\"\nurl = \"https://bot:hunter2secret@mcp.example.com/mcp\"\n",
    );
    let mut command = sandbox.command();
    command
        .env("OPENAI_API_KEY", "sk-proj-abcdefghijklmnopqrstuvwx9876")
        .args(["run", "--print-config"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("GITHUB_TOKEN = \"ghp****3210\""), "{text}");
    assert!(!text.contains("ZyXwVuTsRq"), "{text}");
    assert!(!text.contains("AbCdEfGhIj"), "{text}");
    assert!(!text.contains("hunter2secret"), "{text}");
    assert!(
        text.contains("https://bot:****@mcp.example.com/mcp"),
        "{text}"
    );
}

#[test]
fn the_provider_is_picked_from_anthropic_api_key_alone() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.command();
    command
        .env(
            "ANTHROPIC_API_KEY",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
        )
        .args(["run", "--print-config"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("kind = \"anthropic\""), "{text}");
    assert!(
        text.contains("base_url = \"https://api.anthropic.com\""),
        "{text}"
    );
    assert!(
        text.contains("api_key_env = \"ANTHROPIC_API_KEY\""),
        "{text}"
    );
    // The default database is in the user data dir.
    let data_db = sandbox.path().join("data").join("oxydra").join("oxydra.db");
    assert!(text.contains(&data_db.display().to_string()), "{text}");
}

#[test]
fn a_named_provider_without_its_key_names_the_variable() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .command()
        .args(["run", "--provider", "anthropic", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("ANTHROPIC_API_KEY"), "{message}");
    assert!(message.contains("--provider"), "{message}");
}

#[test]
fn an_unset_api_key_env_names_the_variable_and_the_file() {
    let sandbox = Sandbox::new();
    sandbox.write_trusted_config(
        "[provider]\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"OXYDRA_TEST_NO_SUCH_KEY\"\n",
    );
    let output = sandbox
        .command()
        .args(["run", "hello"])
        .env_remove("OXYDRA_TEST_NO_SUCH_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("OXYDRA_TEST_NO_SUCH_KEY"), "{message}");
    assert!(message.contains("oxydra.toml"), "{message}");
}

#[test]
fn syntax_errors_and_out_of_range_values_name_the_file_and_key() {
    let sandbox = Sandbox::new();
    let output = run_with_config(&sandbox, "[runtime]\nmax_turns = \n");
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("oxydra.toml: line 2"), "{message}");

    let output = run_with_config(&sandbox, "[runtime]\nmax_turns = 0\n");
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("runtime.max_turns"), "{message}");
    assert!(message.contains("at least 1"), "{message}");

    let output = run_with_config(&sandbox, "[provider]\nkind = \"bard\"\n");
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("provider.kind"), "{message}");
    assert!(message.contains("openai"), "{message}");
    assert!(message.contains("gemini"), "{message}");
}

#[test]
fn a_first_run_stores_its_session_in_the_user_data_dir() {
    let sandbox = Sandbox::new();
    let server =
        oxydra_test_support::MockServer::start(vec![oxydra_test_support::openai::text("Hello.")])
            .unwrap();
    let output = sandbox
        .command()
        .current_dir(&sandbox.workspace)
        .args(["run", "--base-url", &server.openai_url(), "Say hello"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "Hello.");
    let data_db = sandbox.path().join("data").join("oxydra").join("oxydra.db");
    assert!(data_db.is_file(), "no database at {}", data_db.display());
}

#[test]
fn a_project_file_at_the_repository_root_is_found_from_a_sub_folder() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.path().join(".git")).unwrap();
    // Narrowing needs no trust; `trust` run from the sub-folder finds the same file.
    std::fs::write(
        sandbox.path().join("oxydra.toml"),
        "[runtime]\nmax_turns = 3\n",
    )
    .unwrap();
    let sub = sandbox.path().join("src").join("deep");
    std::fs::create_dir_all(&sub).unwrap();
    let mut command = sandbox.command();
    command
        .current_dir(&sub)
        .env("OPENAI_API_KEY", "sk-proj-abcdefghijklmnopqrstuvwx9876")
        .args(["run", "--print-config"]);
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("max_turns = 3"), "{text}");
    let root_file = sandbox.path().join("oxydra.toml").canonicalize().unwrap();
    assert!(
        text.contains(&root_file.display().to_string()),
        "the header names the file found: {text}"
    );
    let mut trust = sandbox.command();
    trust.current_dir(&sub).arg("trust");
    let output = trust.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains(&root_file.display().to_string()),
        "{}",
        stdout(&output)
    );
}
