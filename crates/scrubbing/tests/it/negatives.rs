//! Text that must come back unchanged (and borrowed).

use std::borrow::Cow;

use oxydra_scrubbing::{scrub, shannon_entropy};

fn check_clean(inputs: &[&str]) {
    for input in inputs {
        let out = scrub(input);
        assert_eq!(out.text, *input, "changed: {input}");
        assert!(
            out.is_clean(),
            "redactions for {input}: {:?}",
            out.redactions
        );
        assert!(
            matches!(out.text, Cow::Borrowed(_)),
            "allocated for {input}"
        );
    }
}

#[test]
fn hashes_and_ids() {
    check_clean(&[
        "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  target/release/oxydra",
        "sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nMerge: 1a2b3c4 5d6e7f8",
        "id 550e8400-e29b-41d4-a716-446655440000 and 6BA7B810-9DAD-11D1-80B4-00C04FD430C8",
        "golang.org/x/text v0.3.7 h1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk=",
        r#""integrity": "sha512-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC""#,
        "docker pull alpine@sha256:4bcff63911fcb4448bd4fdacec207030997caf25e9bea4045fa6c8c44de311d1",
    ]);
}

#[test]
fn base64_of_plain_english_is_kept() {
    let encoded = "dGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIHRoZSBsYXp5IGRvZw==";
    // High entropy, yet it decodes to prose, so it is not a secret.
    assert!(
        shannon_entropy(encoded) > 4.5,
        "{}",
        shannon_entropy(encoded)
    );
    check_clean(&[
        encoded,
        "payload: dGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIHRoZSBsYXp5IGRvZw==",
        "base64: U29tZSBwbGFpbiB0ZXh0IHRoYXQgaXMgZW5jb2RlZA==",
    ]);
}

#[test]
fn paths_urls_and_identifiers() {
    check_clean(&[
        "/usr/local/lib/python3.11/site-packages/foo.py",
        "  File \"/home/ada/.venv/lib/python3.12/site-packages/requests/adapters.py\", line 517",
        "/home/ada/Projects/MyApp2024/src/components/Button2.tsx",
        "fn very_long_function_name_for_testing() {}",
        "def test_parse_config_with_many_options_v2(self):",
        "parseHttpResponseHeaders2024Version3 and MyComponent2024Renderer",
        "SOME_VERY_LONG_CONSTANT_NAME_2024 = 1",
        "https://docs.rs/regex/latest/regex/struct.RegexSet.html",
        "git clone https://github.com/oxydra/oxydra.git",
        "https://example.com/path?q=1&page=2#frag",
        "task-runner-for-something-long-name",
        "sk-this-is-a-long-kebab-case-name-here",
        "--some-very-long-command-line-flag-name=42",
    ]);
}

#[test]
fn labelled_non_secrets() {
    check_clean(&[
        "max_tokens: 1024",
        r#"{"max_tokens": 1024, "token_count": 42, "prompt_tokens": 17}"#,
        "token_count: 42",
        "token_type: Bearer\nexpires_in: 3600",
        "refresh_token: null",
        "access_token = \"\"",
        "password: ***",
        "password: true",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        "PASSWORD=${DB_PASSWORD}",
        "export GITHUB_TOKEN=$(gh auth token)",
        "api_key: <your-api-key>",
        "API_KEY_ENV=OPENAI_API_KEY",
        "password_file: /run/secrets/db",
        "PWD=/home/ada/projects\nOLDPWD=/tmp",
        "X-Api-Key: [REDACTED]",
        "Authorization: Bearer [REDACTED]",
        "Authorization: Bearer $TOKEN",
        "https://user:[REDACTED]@example.com",
        "$ echo $OPENAI_API_KEY",
        "pw: ab",
    ]);
}

#[test]
fn code_is_not_redacted() {
    check_clean(&[
        "fn verify(token: &str, password: String) -> Option<Token> {",
        "    let token = get_token();\n    let pwd = self.config.password;",
        "    password: Option<String>,\n    api_key: SecretString,",
        "def login(password: str = None, token: int = 0):",
        "const token: string = await fetchToken(url);",
        r#"headers = {"Authorization": f"Bearer {token}"}"#,
        "if token == expected_token { return Ok(()) }",
        // A connection's other arguments, or a password given by a variable.
        "sock.connect(('localhost', 8080))",
        "mysqli_connect($host, $user, $pass, 'shop');",
        "reconnect(\"db\", \"admin\", \"later\")",
        // `identified by` outside a statement that makes a user.
        "Each resource is identified by a URI.",
        "grant the role to the user identified by the name",
        // Windows flags that are no user and password.
        "xcopy /u /p src dst",
        "schtasks /u admin /p *",
        // A statement alone on its line is no label of the line below.
        "    try:\n        pass\n        self._write()\n    finally:\n        pass\n        sock.close()",
    ]);
}

#[test]
fn plain_prose_and_logs() {
    check_clean(&[
        "The password is stored in the vault; token budget exceeded.",
        "Bearer authentication is required for this endpoint.",
        "2026-11-22T07:31:02.114Z INFO oxydra_runtime::turn{turn=3}: provider call finished in 812ms, 1532 prompt tokens",
        "    Compiling oxydra-executor v0.1.0 (/work/main/crates/executor)",
        "test result: ok. 42 passed; 0 failed; 0 ignored; finished in 0.31s",
        "naïve café — ünïcödé text ✓ 日本語のテキスト",
        "",
    ]);
}
