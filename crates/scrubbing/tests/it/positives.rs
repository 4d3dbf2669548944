//! Secrets in realistic contexts, each with the exact expected output.

use oxydra_scrubbing::scrub;

fn check(cases: &[(&str, &str)]) {
    for (input, expected) in cases {
        let out = scrub(input);
        assert_eq!(out.text, *expected, "input: {input}");
        assert!(!out.is_clean(), "no redaction reported for: {input}");
        // Idempotence: scrubbing scrubbed text changes nothing.
        let again = scrub(&out.text);
        assert!(again.is_clean(), "second pass changed: {}", out.text);
    }
}

#[test]
fn labelled_values_keep_key_and_quotes() {
    check(&[
        (r#"api_key: "sk-abc123xyz""#, r#"api_key: "[REDACTED]""#),
        ("password=hunter22", "password=[REDACTED]"),
        (
            r#"{"token": "abc123def456", "max_tokens": 1024}"#,
            r#"{"token": "[REDACTED]", "max_tokens": 1024}"#,
        ),
        (
            "client_secret: 'Zm9vYmFyYmF6cXV4'",
            "client_secret: '[REDACTED]'",
        ),
        ("secret_key=changeme123", "secret_key=[REDACTED]"),
        ("passwd: letmein", "passwd: [REDACTED]"),
        ("pwd = p4ssw0rd", "pwd = [REDACTED]"),
        ("apikey=abcd1234", "apikey=[REDACTED]"),
        (
            r#"config.apiKey = "k-123-456""#,
            r#"config.apiKey = "[REDACTED]""#,
        ),
        (
            r#"{"accessToken":"opaque-value-1"}"#,
            r#"{"accessToken":"[REDACTED]"}"#,
        ),
        (
            r#"let password = "correct horse battery staple";"#,
            r#"let password = "[REDACTED]";"#,
        ),
        ("password := 'p@ss:word'", "password := '[REDACTED]'"),
        (
            "'passphrase' => 'open sesame'",
            "'passphrase' => '[REDACTED]'",
        ),
        (
            r#"{\"refresh_token\": \"rt-998877\"}"#,
            r#"{\"refresh_token\": \"[REDACTED]\"}"#,
        ),
        ("password: 123456", "password: [REDACTED]"),
    ]);
}

#[test]
fn a_label_alone_on_its_line_and_the_value_below_it() {
    check(&[
        (
            "API Secret\na2813cd4502f94a77de470f2d7adc8d7\n",
            "API Secret\n[REDACTED]\n",
        ),
        ("Password\n  Xq9v!2mLp\n", "Password\n  [REDACTED]\n"),
    ]);
}

#[test]
fn a_connection_opened_with_server_user_and_password() {
    check(&[
        (
            "$db = mysqli_connect('db.internal', 'admin', 'P@ssw0rd', 'shop');",
            "$db = mysqli_connect('db.internal', 'admin', '[REDACTED]', 'shop');",
        ),
        (
            r#"DriverManager.getConnection("jdbc:postgresql://db/app", "app", "Tr0ub4dor&3");"#,
            r#"DriverManager.getConnection("jdbc:postgresql://db/app", "app", "[REDACTED]");"#,
        ),
    ]);
}

#[test]
fn a_windows_command_s_user_then_password() {
    check(&[
        (
            "schtasks /create /tn Backup /sc daily /ru admin /rp P@ssw0rd",
            "schtasks /create /tn Backup /sc daily /ru admin /rp [REDACTED]",
        ),
        (
            "wmic /node:srv /user:admin /password:Xq9v!2mLp process list",
            "wmic /node:srv /user:admin /password:[REDACTED] process list",
        ),
    ]);
}

#[test]
fn sql_s_password_clause() {
    check(&[
        (
            "CREATE USER 'admin'@'%' IDENTIFIED BY 'Xq9v!2mLp';",
            "CREATE USER 'admin'@'%' IDENTIFIED BY '[REDACTED]';",
        ),
        (
            "ALTER USER scott IDENTIFIED BY Tig3r_x;",
            "ALTER USER scott IDENTIFIED BY [REDACTED];",
        ),
    ]);
}

#[test]
fn yaml_documents() {
    check(&[
        (
            "database:\n  host: db.internal\n  username: app\n  password: s3cr3t!\n  pool: 5\n",
            "database:\n  host: db.internal\n  username: app\n  password: [REDACTED]\n  pool: 5\n",
        ),
        (
            "apiVersion: v1\nkind: Secret\ndata:\n  password: cGFzc3dvcmQxMjM=\n",
            "apiVersion: v1\nkind: Secret\ndata:\n  password: [REDACTED]\n",
        ),
    ]);
}

#[test]
fn dotenv_and_shell() {
    check(&[
        (
            "export GITHUB_TOKEN=ghp_4f9Kd8sLqX2vNw7ZyT1mR0aB3cE5gH6jP9uQ",
            "export GITHUB_TOKEN=[REDACTED]",
        ),
        (
            "DB_HOST=localhost\nDB_PASSWORD=Tr0ub4dor&3\nDEBUG=true\n",
            "DB_HOST=localhost\nDB_PASSWORD=[REDACTED]\nDEBUG=true\n",
        ),
        (
            "  501  export OPENAI_API_KEY=sk-proj-Xa81mQ0zVfT2bL7kN4pR9sW6yD3hJ5cG\n  502  cargo run",
            "  501  export OPENAI_API_KEY=[REDACTED]\n  502  cargo run",
        ),
        (
            "mysql --password s3cretPw --user root",
            "mysql --password [REDACTED] --user root",
        ),
        (
            "deploy --api-key=abcd-1234-efgh",
            "deploy --api-key=[REDACTED]",
        ),
        (
            "2026-01-01 INFO login ok user=ada session_token=9d1e6c0b8a7f4e3d2c1b0a99",
            "2026-01-01 INFO login ok user=ada session_token=[REDACTED]",
        ),
    ]);
}

#[test]
fn http_headers_and_curl() {
    check(&[
        (
            "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "Authorization: Bearer [REDACTED]",
        ),
        (
            "Authorization: Bearer opaque.token-value_123",
            "Authorization: Bearer [REDACTED]",
        ),
        (
            "authorization: basic dXNlcjpwYXNzd29yZA==",
            "authorization: basic [REDACTED]",
        ),
        (
            "Authorization: token ghp_4f9Kd8sLqX2vNw7ZyT1mR0aB3cE5gH6jP9uQ",
            "Authorization: token [REDACTED]",
        ),
        (
            "Proxy-Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l",
            "Proxy-Authorization: Basic [REDACTED]",
        ),
        (
            "curl -H \"X-Api-Key: 9f8e7d6c5b4a\" https://api.example.com/v1/items",
            "curl -H \"X-Api-Key: [REDACTED]\" https://api.example.com/v1/items",
        ),
        (
            "curl -H 'Authorization: Bearer sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789' https://api.anthropic.com",
            "curl -H 'Authorization: Bearer [REDACTED]' https://api.anthropic.com",
        ),
        (
            "curl -u admin:hunter22 https://example.com",
            "curl -u admin:[REDACTED] https://example.com",
        ),
        (
            r#"{"headers": {"Authorization": "Bearer abc123def456ghi789"}}"#,
            r#"{"headers": {"Authorization": "Bearer [REDACTED]"}}"#,
        ),
        (
            "request sent with bearer 7Fh2kLm9Qx0Rt5Wz",
            "request sent with bearer [REDACTED]",
        ),
        (
            "GET /v1/me?access_token=EAAB1234abcd&fields=id HTTP/1.1",
            "GET /v1/me?access_token=[REDACTED]&fields=id HTTP/1.1",
        ),
    ]);
}

#[test]
fn urls_with_credentials() {
    check(&[
        (
            "DATABASE_URL=postgres://app:s3cr3t-P4ss@db.internal:5432/app",
            "DATABASE_URL=postgres://app:[REDACTED]@db.internal:5432/app",
        ),
        (
            "git clone https://ada:tok3n@github.com/o/r.git",
            "git clone https://ada:[REDACTED]@github.com/o/r.git",
        ),
        (
            "redis://:hunter2@cache:6379/0",
            "redis://:[REDACTED]@cache:6379/0",
        ),
        (
            "amqp://guest:p@ss@rabbit/vhost",
            "amqp://guest:[REDACTED]@rabbit/vhost",
        ),
        // A token as the user name, a fixed word as the password (GitHub's
        // `x-oauth-basic`): the token goes too.
        (
            "git+https://222cb222pppp408dd673260063e3e3b22222c2:x-oauth-basic@github.com/o/r.git",
            "git+https://[REDACTED]:[REDACTED]@github.com/o/r.git",
        ),
        // A user name that reads as a name stays beside its password.
        (
            "https://deploy-bot-2019:s3cr3t-P4ss@git.example.com/o/r.git",
            "https://deploy-bot-2019:[REDACTED]@git.example.com/o/r.git",
        ),
        // A token right after the scheme, unlabelled: the URL keeps its `//`.
        (
            "open https://Zk3pQ9vX2mL7rT4wY8nB6cJ1hF5sD0gAqW",
            "open https://[REDACTED:high-entropy]",
        ),
    ]);
}

#[test]
fn well_known_formats_unlabelled() {
    check(&[
        (
            "found AKIAIOSFODNN7EXAMPLE in logs",
            "found [REDACTED] in logs",
        ),
        ("ASIAY34FZKBOKMUTVV7A temporary", "[REDACTED] temporary"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = [REDACTED]",
        ),
        ("gho_16C7e42F292c6912E7710c838347Ae178B4a", "[REDACTED]"),
        (
            "remote: github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN done",
            "remote: [REDACTED] done",
        ),
        (
            "slack: xoxb-2233445566-1122334455-abcdefghijKLMNOP",
            "slack: [REDACTED]",
        ),
        (
            "key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd",
            "key [REDACTED]",
        ),
        (
            "using sk-proj-Xa81mQ0zVfT2bL7kN4pR9sW6yD3hJ5cG now",
            "using [REDACTED] now",
        ),
        (
            "legacy sk-Xa81mQ0zVfT2bL7kN4pR9sW6yD3hJ5cGabcdefgh",
            "legacy [REDACTED]",
        ),
        (
            "maps AIzaSyD4-abcdefghijklmnopqrstuvwxyz01234",
            "maps [REDACTED]",
        ),
        (
            "rk_live_51H8abcdefGHIJKLmnopQRST and sk_test_4eC39HqLyjWDarjtT1zdp7dc",
            "[REDACTED] and [REDACTED]",
        ),
        (
            "jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U;",
            "jwt=[REDACTED];",
        ),
    ]);
}

#[test]
fn private_key_blocks() {
    check(&[
        (
            "key file:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq3\nx9Yw+Zk/1aB==\n-----END RSA PRIVATE KEY-----\nok",
            "key file:\n[REDACTED:private-key]\nok",
        ),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB\n-----END OPENSSH PRIVATE KEY-----",
            "[REDACTED:private-key]",
        ),
        (
            "truncated: -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5\nowAbCdEf",
            "truncated: [REDACTED:private-key]",
        ),
        (
            r#"{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"}"#,
            r#"{"type": "service_account", "private_key": "[REDACTED:private-key]\n"}"#,
        ),
        (
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF0abc\n-----END PGP PRIVATE KEY BLOCK-----",
            "[REDACTED:private-key]",
        ),
    ]);
}

#[test]
fn high_entropy_strings() {
    check(&[
        (
            "worker started with key Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF",
            "worker started with key [REDACTED:high-entropy]",
        ),
        (
            "signature: 8Hk2+/Lq9zXw3vB7mN1pR5tY0uE4aS6dFgJ=",
            "signature: [REDACTED:high-entropy]",
        ),
        (
            "dop_v1_4c9b1f0e8d7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0 end",
            "[REDACTED:high-entropy] end",
        ),
        (
            "nested /srv/app/Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF/config",
            "nested /srv/app/[REDACTED:high-entropy]/config",
        ),
    ]);
}
