//! `oxydra mcp list` prints no secret of a server's configuration (issue 42, attack
//! 15): keys in its arguments (`--api-key=…`, `--token …`), its URL (password, query)
//! and what its failure quotes are masked, in text and JSON lines, as `--print-config`
//! masks them.

use crate::common;

use common::{Sandbox, json_lines, stderr, stdout};

/// A key as a provider would issue it: random enough for every detector.
const KEY: &str = "sk-live-4f9KqT2xVb7LmN3pR8sW1zY6";
/// A GitHub token, given as the value of a separate `--token` argument.
const TOKEN: &str = "ghp_Z3kX9mQ2wR7tY4uI8oP1aS5dF6gH0jK2lM4n";

/// The parts of the secrets that must never be printed.
const SECRET_PARTS: [&str; 3] = [
    "4f9KqT2xVb7LmN3pR8sW1zY6",
    "Z3kX9mQ2wR7tY4uI8oP1aS5d",
    "hunter2",
];

fn assert_no_secret(what: &str, text: &str) {
    for part in SECRET_PARTS {
        assert!(!text.contains(part), "{what} prints {part}: {text}");
    }
}

#[test]
fn mcp_list_masks_keys_in_arguments_urls_and_failures() {
    let sandbox = Sandbox::new();
    // A stdio server that fails quoting its own command line on stderr, and an HTTP
    // server that cannot be reached at a URL holding a password and a key.
    sandbox.write_trusted_config(&format!(
        "[[mcp_servers]]\nname = \"keyed\"\ncommand = \"sh\"\n\
         args = [\"-c\", \"echo \\\"bad key $1 $3\\\" >&2; exit 3\", \"sh\", \
                 \"--api-key={KEY}\", \"--token\", \"{TOKEN}\"]\n\
         env = {{ API_TOKEN = \"{KEY}\" }}\n\n\
         [[mcp_servers]]\nname = \"remote\"\n\
         url = \"http://me:hunter2@127.0.0.1:1/mcp?api_key={KEY}\"\n\
         init_timeout_secs = 5\n\
         [mcp_servers.headers]\nX-Api-Key = \"{KEY}\"\n"
    ));
    let output = sandbox.command().args(["mcp", "list"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("keyed: failed"), "{text}");
    assert!(text.contains("--api-key="), "{text}");
    assert!(text.contains("--token"), "{text}");
    assert!(text.contains("remote: failed"), "{text}");
    assert!(text.contains("http://me:****@127.0.0.1:1/mcp"), "{text}");
    assert_no_secret("mcp list", &text);
    assert_no_secret("mcp list's stderr", &stderr(&output));

    let output = sandbox
        .command()
        .args(["mcp", "list", "--output", "jsonl"])
        .output()
        .unwrap();
    let lines = stdout(&output);
    assert_no_secret("mcp list --output jsonl", &lines);
    let servers = json_lines(&output);
    assert_eq!(servers.len(), 2, "{lines}");
    let transport = servers[0]["transport"].as_str().unwrap();
    assert!(transport.starts_with("stdio: sh -c"), "{transport}");
    assert!(transport.contains("--api-key="), "{transport}");

    // `--print-config` masks the same way.
    let output = sandbox
        .command()
        .args(["run", "--print-config"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_no_secret("--print-config", &stdout(&output));
}

/// A plain-looking value no pattern would catch: only its being a handle's value
/// redacts it.
const HANDLE_VALUE: &str = "plain-words-only-the-handle-knows";

/// `oxydra mcp list` with the handle's variable set.
fn list_with_the_secret_set(sandbox: &Sandbox) -> std::process::Output {
    sandbox
        .command()
        .env("OXYDRA_TEST_VENDOR_VALUE", HANDLE_VALUE)
        .args(["mcp", "list"])
        .output()
        .unwrap()
}

#[test]
fn a_secret_handle_reaches_the_server_env_and_is_redacted_from_what_it_prints() {
    let sandbox = Sandbox::new();
    // The server fails quoting the variable the handle filled: the value reached it
    // (the failure says `got:` followed by something, not the handle's text) and the
    // listing shows it redacted.
    sandbox.write_trusted_config(
        "[secrets.VENDOR]\nenv = \"OXYDRA_TEST_VENDOR_VALUE\"\ntools = [\"mcp:vendor\"]\n\n\
         [[mcp_servers]]\nname = \"vendor\"\ncommand = \"sh\"\n\
         args = [\"-c\", \"echo \\\"got: $VENDOR_TOKEN\\\" >&2; exit 3\"]\n\
         env = { VENDOR_TOKEN = \"{{secret:VENDOR}}\" }\n",
    );
    let output = list_with_the_secret_set(&sandbox);
    let text = stdout(&output);
    assert!(text.contains("vendor: failed"), "{text}");
    assert!(
        text.contains("got: [REDACTED"),
        "the value reached the server, redacted here: {text}"
    );
    assert!(
        !text.contains("{{secret:VENDOR}}"),
        "the handle was not put in: {text}"
    );
    assert!(!text.contains(HANDLE_VALUE), "{text}");
    assert!(
        !stderr(&output).contains(HANDLE_VALUE),
        "{}",
        stderr(&output)
    );

    // A handle given to another server refuses the start, naming the server.
    sandbox.write_trusted_config(
        "[secrets.VENDOR]\nenv = \"OXYDRA_TEST_VENDOR_VALUE\"\ntools = [\"mcp:vendor\"]\n\n\
         [[mcp_servers]]\nname = \"other\"\ncommand = \"sh\"\nargs = [\"-c\", \"exit 0\"]\n\
         env = { T = \"{{secret:VENDOR}}\" }\n",
    );
    let output = list_with_the_secret_set(&sandbox);
    assert_ne!(output.status.code(), Some(0));
    let message = stderr(&output);
    assert!(
        message.contains("`other`") && message.contains("mcp:vendor"),
        "{message}"
    );
    assert!(!message.contains(HANDLE_VALUE), "{message}");
}
