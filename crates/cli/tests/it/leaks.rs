//! Secrets must not leave the process unscrubbed, and malformed tool calls must not
//! break a run: `oxydra` end to end against scripted servers.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use common::{Sandbox, events_of_type, json_lines, stderr, stdout};
use oxydra_test_support::{MockServer, RecordedRequest, Reply, openai};
use sha2::Digest;

const PASSWORD: &str = "hunter2-very-secret";
const KEY: &str = "sk-proj-Zq8xKf3LmN9pR2tVw5yB7cD1eG4hJ6kS";

/// Every byte of the database and its `-wal` / `-shm` files, as text.
fn database_bytes(db: &Path) -> String {
    let mut all = Vec::new();
    for suffix in ["", "-wal", "-shm"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        if let Ok(bytes) = std::fs::read(&name) {
            all.extend_from_slice(&bytes);
        }
    }
    String::from_utf8_lossy(&all).into_owned()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn assert_nowhere(secret: &str, output: &Output, sandbox: &Sandbox) {
    assert!(
        !stdout(output).contains(secret),
        "stdout: {}",
        stdout(output)
    );
    assert!(
        !stderr(output).contains(secret),
        "stderr: {}",
        stderr(output)
    );
    let db = database_bytes(&sandbox.db);
    assert!(!db.is_empty(), "no database was written");
    assert!(!db.contains(secret), "the database holds the secret");
}

/// A config allowing `web_fetch` to reach the local page server.
fn allow_loopback_fetch(sandbox: &Sandbox) {
    sandbox.write_trusted_config("[tools.web_fetch]\nallow_hosts = [\"127.0.0.1\"]\n");
}

#[test]
fn a_500_page_holding_a_password_leaks_it_nowhere() {
    let sandbox = Sandbox::new();
    allow_loopback_fetch(&sandbox);
    let page = MockServer::start(vec![Reply::json(
        500,
        format!(r#"{{"debug": "db connect failed", "password": "{PASSWORD}", "dsn": "password={PASSWORD}"}}"#),
    )])
    .unwrap();
    let url = format!("{}/admin", page.url(""));
    let model = MockServer::start(vec![
        openai::tool_calls(&[(
            "call_f",
            "web_fetch",
            &serde_json::json!({ "url": url }).to_string(),
        )]),
        openai::text("The page failed."),
    ])
    .unwrap();
    let mut command = sandbox.oxydra_command(&model, "run");
    command.env("RUST_LOG", "debug").arg("Fetch the admin page");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(page.requests().len(), 1, "the page was fetched");

    let events = json_lines(&output);
    let failed = events_of_type(&events, "tool_failed");
    assert_eq!(failed.len(), 1, "{events:?}");
    let error = failed[0]["error"].as_str().unwrap();
    assert!(error.contains("500"), "{error}");
    assert!(error.contains("[REDACTED]"), "{error}");
    // The failure was logged too (debug), scrubbed.
    assert!(
        stderr(&output).contains("tool call failed"),
        "{}",
        stderr(&output)
    );
    assert_nowhere(PASSWORD, &output, &sandbox);
    let sent = model.requests()[1].body.to_string();
    assert!(!sent.contains(PASSWORD), "{sent}");

    // Created by oxydra: the database is owner-only, and so is its directory.
    assert_eq!(mode(&sandbox.db), 0o600);
    assert_eq!(mode(sandbox.db.parent().unwrap()), 0o700);
    for suffix in ["-wal", "-shm"] {
        let mut name = sandbox.db.as_os_str().to_owned();
        name.push(suffix);
        let path = Path::new(&name);
        if path.exists() {
            assert_eq!(mode(path), 0o600, "{}", path.display());
        }
    }
}

fn provider_401() -> Reply {
    Reply::json(
        401,
        format!(
            r#"{{"error": {{"message": "Incorrect API key provided: {KEY}. You can find your API key at the dashboard.", "type": "invalid_request_error", "code": "invalid_api_key"}}}}"#
        ),
    )
}

#[test]
fn a_provider_401_echoing_the_key_leaks_it_nowhere() {
    for format in ["jsonl", "text"] {
        let sandbox = Sandbox::new();
        let server =
            MockServer::start(vec![provider_401(), provider_401(), provider_401()]).unwrap();
        sandbox.write_trusted_config(&format!(
            "[provider]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"MY_KEY\"\n",
            server.openai_url()
        ));
        let mut command = sandbox.stored_command("run");
        command
            .env("MY_KEY", KEY)
            .env("RUST_LOG", "debug")
            .args(["--output", format, "hello"]);
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        assert!(stderr(&output).contains("error:"), "{}", stderr(&output));
        assert_eq!(
            server.requests()[0].authorization(),
            Some(format!("Bearer {KEY}").as_str()),
            "the key was sent, so the echo is real"
        );
        if format == "jsonl" {
            let events = json_lines(&output);
            let errors = events_of_type(&events, "error");
            assert_eq!(errors.len(), 1, "{events:?}");
            let message = errors[0]["message"].as_str().unwrap();
            assert!(message.contains("401"), "{message}");
            assert!(
                message.contains("[REDACTED]"),
                "the echo reached the message: {message}"
            );
        }
        assert_nowhere(KEY, &output, &sandbox);
        assert_nowhere(&KEY[8..], &output, &sandbox);
    }
}

#[test]
fn an_existing_world_readable_database_is_tightened() {
    let sandbox = Sandbox::new();
    let server = MockServer::start(vec![openai::text("one"), openai::text("two")]).unwrap();
    let first = sandbox.run_openai(&server.openai_url(), &[], "first");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    std::fs::set_permissions(&sandbox.db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let second = sandbox.run_openai(&server.openai_url(), &[], "second");
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert_eq!(mode(&sandbox.db), 0o600);
    assert!(
        stderr(&second).contains("its mode is now 600"),
        "{}",
        stderr(&second)
    );
}

/// The tool messages of a request body: `(tool_call_id, content)`.
fn tool_messages(body: &serde_json::Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// `oxydra run PROMPT` against a model that makes `calls` and then answers: the run
/// succeeds with two requests. Its output, the requests, and the tool results the
/// second request carries (call id, content).
fn run_with_calls(
    sandbox: &Sandbox,
    calls: &[(&str, &str, &str)],
    prompt: &str,
) -> (Output, Vec<RecordedRequest>, Vec<(String, String)>) {
    let model = MockServer::start(vec![openai::tool_calls(calls), openai::text("Read.")]).unwrap();
    let output = sandbox
        .oxydra_command(&model, "run")
        .arg(prompt)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "{}", stderr(&output));
    let results = tool_messages(&requests[1].body);
    (output, requests, results)
}

/// The call ids of the assistant messages' tool calls in a request body.
fn assistant_call_ids(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|call| call["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_tool_call_with_an_empty_name_is_an_error_the_model_sees() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("a.txt"), "alpha").unwrap();
    let server = MockServer::start(vec![
        openai::tool_calls(&[
            ("call_empty", "", "{}"),
            ("call_a", "file_read", r#"{"path":"a.txt"}"#),
        ]),
        openai::text("Recovered."),
    ])
    .unwrap();
    let mut command = sandbox.oxydra_command(&server, "run");
    command.arg("Read a.txt");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    assert_eq!(events_of_type(&events, "final").len(), 1, "{events:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_messages(&requests[1].body);
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0].0, "call_empty");
    assert!(
        results[0].1.starts_with("Tool execution failed:"),
        "{results:?}"
    );
    assert_eq!(results[1].0, "call_a");
    assert!(results[1].1.contains("alpha"), "{results:?}");
}

#[test]
fn duplicate_call_ids_in_one_turn_get_one_result_each() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join("a.txt"), "alpha").unwrap();
    std::fs::write(sandbox.workspace.join("b.txt"), "beta").unwrap();
    let server = MockServer::start(vec![
        openai::tool_calls(&[
            ("call_same", "file_read", r#"{"path":"a.txt"}"#),
            ("call_same", "file_read", r#"{"path":"b.txt"}"#),
        ]),
        openai::text("Both read."),
        openai::text("Again."),
    ])
    .unwrap();
    let mut command = sandbox.oxydra_command(&server, "run");
    command.arg("Read both");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let events = json_lines(&output);
    let session = events_of_type(&events, "final")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // The request after the tools: every call id once, each with exactly one result.
    let body = &server.requests()[1].body;
    let ids = assistant_call_ids(body);
    let results = tool_messages(body);
    assert_eq!(ids.len(), 2, "{body}");
    assert_ne!(ids[0], ids[1], "{body}");
    let result_ids: Vec<&String> = results.iter().map(|(id, _)| id).collect();
    assert_eq!(result_ids, ids.iter().collect::<Vec<_>>(), "{body}");
    assert!(results.iter().any(|(_, text)| text.contains("alpha")));
    assert!(results.iter().any(|(_, text)| text.contains("beta")));

    // The stored session continues into a valid request too.
    let mut command = sandbox.oxydra_command(&server, "run");
    command.args(["--session", &session, "Again"]);
    let again = command.output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let body = &server.requests()[2].body;
    let ids = assistant_call_ids(body);
    let results: Vec<String> = tool_messages(body).into_iter().map(|(id, _)| id).collect();
    assert_eq!(results, ids, "{body}");
}

/// The provider's own key, held by the program, printed encoded in a file the model
/// reads: neither the spaced nor the decimal-byte form reaches the provider, the
/// output or the database (issue 46: secrets known by value).
#[test]
fn the_provider_key_printed_encoded_reaches_nothing() {
    let sandbox = Sandbox::new();
    // The key the provider is called with (a custom base URL gets no key from the
    // environment unless the configuration names its variable).
    sandbox.write_trusted_config(
        "[provider]\nkind = \"openai\"\napi_key_env = \"TEST_PROVIDER_KEY\"\n",
    );
    let spaced: Vec<String> = KEY.chars().map(String::from).collect();
    let spaced = spaced.join(" ");
    let decimal: Vec<String> = KEY.bytes().map(|b| b.to_string()).collect();
    let decimal = decimal.join(" ");
    std::fs::write(
        sandbox.workspace.join("dump.txt"),
        format!("spaced: {spaced}\nbytes: {decimal}\n"),
    )
    .unwrap();
    let model = MockServer::start(vec![
        openai::tool_calls(&[("call_r", "file_read", r#"{"path":"dump.txt"}"#)]),
        openai::text("Read it."),
    ])
    .unwrap();
    let mut command = sandbox.oxydra_command(&model, "run");
    command.env("TEST_PROVIDER_KEY", KEY).arg("Read dump.txt");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    // The key itself went where it belongs: the provider's auth header.
    assert_eq!(
        requests[0].headers["authorization"].to_str().unwrap(),
        format!("Bearer {KEY}")
    );
    let second = String::from_utf8_lossy(&requests[1].raw_body).into_owned();
    assert!(second.contains("spaced: [REDACTED]"), "{second}");
    assert!(second.contains("bytes: [REDACTED]"), "{second}");
    let tail = &decimal[decimal.len() - 12..];
    for form in [spaced.as_str(), tail] {
        assert!(!second.contains(form), "{second}");
        assert_nowhere(form, &output, &sandbox);
    }
}

const DOTENV: &str = "OPENAI_API_KEY=sk-proj-Zq8xKf3LmN9pR2tVw5yB7cD1eG4hJ6kSa1b2c3d4\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8xKf3LmN\n";

/// The base64 the provider would get of the file's bytes: a secret inside it.
fn as_part(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The wrap-and-read attack of issue 46: the model reads a scrubbed `.env`, puts a
/// `%PDF-1.4` header in front with one `file_edit`, and reads it again hoping for an
/// attachment whose bytes are never scrubbed. The second read is withheld as media;
/// a PDF nobody in the session wrote, whose bytes hold the keys, is withheld too.
#[test]
fn a_secret_file_dressed_as_a_pdf_is_never_attached() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace.join(".env"), DOTENV).unwrap();
    let dressed = format!("%PDF-1.4\n{DOTENV}%%EOF\n");
    std::fs::write(sandbox.workspace.join("found.pdf"), &dressed).unwrap();
    let edit = serde_json::json!({
        "path": ".env",
        "old": "OPENAI_API_KEY=",
        "new": "%PDF-1.4\nOPENAI_API_KEY=",
    })
    .to_string();
    let model = MockServer::start(vec![
        openai::tool_calls(&[("c1", "file_read", r#"{"path":".env"}"#)]),
        openai::tool_calls(&[("c2", "file_edit", &edit)]),
        openai::tool_calls(&[("c3", "file_read", r#"{"path":"./.env"}"#)]),
        openai::tool_calls(&[("c4", "file_read", r#"{"path":"found.pdf"}"#)]),
        openai::text("done"),
    ])
    .unwrap();
    let mut command = sandbox.oxydra_command(&model, "run");
    command.args(["--approve", "allow"]).arg("Tidy .env");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = model.requests();
    assert_eq!(requests.len(), 5, "{}", stderr(&output));
    let edited = std::fs::read(sandbox.workspace.join(".env")).unwrap();
    assert!(edited.starts_with(b"%PDF-1.4"), "the edit was made");
    let last = String::from_utf8_lossy(&requests[4].raw_body).into_owned();
    assert!(
        !last.contains("data:application/pdf") && !last.contains("\"type\":\"file\""),
        "a part was attached: {last}"
    );
    assert!(
        last.contains("`.env` was written in this session"),
        "{last}"
    );
    assert!(
        last.contains("its bytes hold text that looks like a secret"),
        "{last}"
    );
    for secret in [
        "sk-proj-Zq8xKf3LmN9pR2tVw5yB7cD1eG4hJ6kSa1b2c3d4",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8xKf3LmN",
    ] {
        assert!(!last.contains(secret), "{last}");
        assert_nowhere(secret, &output, &sandbox);
    }
    for bytes in [edited.as_slice(), dressed.as_bytes()] {
        let encoded = as_part(bytes);
        assert!(!last.contains(&encoded[..40]), "{last}");
        assert_nowhere(&encoded[..40], &output, &sandbox);
    }
}

/// `[secrets.NAME]` through the binary: the command gets the value (the digest it
/// writes is the value's), the model only the handle; what the command prints of it is
/// scrubbed; another tool is refused with a message naming the tools it may be used
/// with; the provider requests, the JSONL events and the stored session never hold it.
#[test]
fn a_secret_handle_reaches_the_command_and_nothing_else() {
    const VALUE: &str = "tok-Rm8Kq2ZtW7vXy4Lp9Nd3";
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.path().join("token.txt"), format!("{VALUE}\n")).unwrap();
    sandbox
        .write_trusted_config("[secrets.DEPLOY]\nfile = \"token.txt\"\ntools = [\"shell_exec\"]\n");
    let shell = serde_json::json!({
        "command": "echo \"len=$(printf '%s' '{{secret:DEPLOY}}' | wc -c)\"; echo '{{secret:DEPLOY}}'; \
                    printf '%s' '{{secret:DEPLOY}}' | sha256sum | cut -c1-64 > digest.txt"
    })
    .to_string();
    let model = MockServer::start(vec![
        openai::tool_calls(&[("c1", "shell_exec", &shell)]),
        openai::tool_calls(&[(
            "c2",
            "file_write",
            r#"{"path":"t.txt","content":"{{secret:DEPLOY}}"}"#,
        )]),
        openai::text("done"),
    ])
    .unwrap();
    let mut command = sandbox.oxydra_command(&model, "run");
    command.args(["--approve", "allow"]).arg("Deploy");
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "{}", stderr(&output));
    let second = String::from_utf8_lossy(&requests[1].raw_body).into_owned();
    // The command saw the whole value (its length, and the digest it wrote), and its
    // echo came back scrubbed.
    assert!(second.contains(&format!("len={}", VALUE.len())), "{second}");
    let digest = std::fs::read_to_string(sandbox.workspace.join("digest.txt")).unwrap();
    let expected: String = sha2::Sha256::digest(VALUE.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    assert_eq!(digest.trim(), expected, "the command did not get the value");
    assert!(second.contains("[REDACTED]"), "{second}");
    let last = String::from_utf8_lossy(&requests[2].raw_body).into_owned();
    assert!(last.contains("may be used with: shell_exec"), "{last}");
    assert!(
        !sandbox.workspace.join("t.txt").exists(),
        "the refused call ran"
    );
    for body in [&second, &last] {
        assert!(!body.contains(VALUE), "{body}");
    }
    assert_nowhere(VALUE, &output, &sandbox);
}

/// Tool output as programs write it, through the binary: a JSON log line whose strings
/// hold a private key and an access key id after escaped line breaks (`\n` written as
/// two characters, so no word boundary comes before the key), and a Python tuple
/// assignment whose second item is the password. The model's request holds none of
/// them, the log line is still valid JSON with its escapes kept, and neither the
/// events nor the stored session hold them.
#[test]
fn secrets_in_json_escaped_output_and_tuple_assignments_reach_nothing() {
    const PEM_BODY: &str = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7qZ";
    const ACCESS_KEY: &str = "AKIAZ7X9QL2MN8VB4KP7";
    const TUPLE_PASSWORD: &str = "Sup3rS3cret!";
    let sandbox = Sandbox::new();
    let log = serde_json::json!({
        "event": "deploy",
        "key": format!("-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----\n"),
        "env": format!("region=eu\n{ACCESS_KEY}\n"),
    });
    std::fs::write(sandbox.workspace.join("deploy.log"), format!("{log}\n")).unwrap();
    std::fs::write(
        sandbox.workspace.join("seed.py"),
        format!("user, password = \"admin\", \"{TUPLE_PASSWORD}\"\n"),
    )
    .unwrap();
    let (output, requests, results) = run_with_calls(
        &sandbox,
        &[
            ("c_log", "file_read", r#"{"path":"deploy.log"}"#),
            ("c_py", "file_read", r#"{"path":"seed.py"}"#),
        ],
        "Read deploy.log and seed.py",
    );
    let content = |id: &str| {
        results
            .iter()
            .find(|(call, _)| call == id)
            .map(|(_, content)| content.clone())
            .unwrap_or_else(|| panic!("no result for {id}: {results:?}"))
    };
    let read_log = content("c_log");
    let first_line = read_log.lines().next().unwrap();
    let scrubbed: serde_json::Value = serde_json::from_str(first_line)
        .unwrap_or_else(|e| panic!("the scrubbed log line is not JSON ({e}): {first_line}"));
    assert_eq!(scrubbed["event"], "deploy");
    assert_eq!(scrubbed["key"], "[REDACTED:private-key]\n", "{first_line}");
    let env = scrubbed["env"].as_str().unwrap();
    assert!(env.starts_with("region=eu\n"), "{env}");
    assert!(env.contains("[REDACTED"), "{env}");
    let read_py = content("c_py");
    assert!(read_py.starts_with("user, password = "), "{read_py}");
    assert!(read_py.contains("[REDACTED]"), "{read_py}");
    let sent = String::from_utf8_lossy(&requests[1].raw_body).into_owned();
    for secret in [PEM_BODY, ACCESS_KEY, TUPLE_PASSWORD] {
        assert!(
            !sent.contains(secret),
            "{secret} reached the provider: {sent}"
        );
        assert_nowhere(secret, &output, &sandbox);
    }
}

/// This round's shapes through the binary: a file of code the scrubber must leave as it
/// is (a flag's argument, a value restating its kind, data with a shape, a type's
/// member) beside the same labels with secrets, and a long labelled value of name
/// words, which a cut into words once made quadratic. The code reaches the model as
/// written; no secret reaches the provider, the events or the database.
#[test]
fn code_that_only_looks_labelled_is_kept_and_the_secrets_beside_it_are_not() {
    const TOKEN: &str = "Zx9qL2mN8vB4kR7tY1wE3uI6";
    const PASSWORD: &str = "Tr0ub4dor&3-staple";
    let sandbox = Sandbox::new();
    let code = [
        "vault kv get -field=password secret/data/db",
        "api_key = \"test_api_key_123\"",
        "token_expires = \"2024-01-01T00:00:00Z\"",
        "Token.Comment: \"italic #A3AAB2\"",
    ];
    let long = format!("token = \"{}\"", "testtoken".repeat(3_000));
    let text = format!(
        "{}\n{long}\napi_token = \"{TOKEN}\"\nlogin --password {PASSWORD}\n",
        code.join("\n")
    );
    std::fs::write(sandbox.workspace.join("ops.txt"), text).unwrap();
    let (output, requests, results) = run_with_calls(
        &sandbox,
        &[("c_ops", "file_read", r#"{"path":"ops.txt"}"#)],
        "Read ops.txt",
    );
    let read = &results.first().expect("the file_read result").1;
    for line in code {
        assert!(read.contains(line), "{line} was changed: {read}");
    }
    let sent = String::from_utf8_lossy(&requests[1].raw_body).into_owned();
    for secret in [TOKEN, PASSWORD] {
        assert!(!sent.contains(secret), "{secret} reached the provider");
        assert_nowhere(secret, &output, &sandbox);
    }
}
