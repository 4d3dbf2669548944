//! The shapes an adversarial corpus leaked through the scrubber, each with the exact
//! output: the label stays, the secret goes, and a second pass changes nothing.

use oxydra_scrubbing::scrub;

fn check(cases: &[(&str, &str)]) {
    for (input, expected) in cases {
        let out = scrub(input);
        assert_eq!(out.text, *expected, "input: {input:?}");
        assert!(
            scrub(&out.text).is_clean(),
            "second pass changed {:?}",
            out.text
        );
        for r in &out.redactions {
            assert!(input.is_char_boundary(r.range.start) && input.is_char_boundary(r.range.end));
        }
    }
}

#[test]
fn env_names_with_weak_or_new_words() {
    check(&[
        ("SMTP_PASS=Dragon%04", "SMTP_PASS=[REDACTED]"),
        ("ADMIN_PASS=n8IIG~w8UN01", "ADMIN_PASS=[REDACTED]"),
        ("PASS=hunter22", "PASS=[REDACTED]"),
        ("PW=x9k2", "PW=[REDACTED]"),
        ("AUTH=dXNlcjpwYXNz", "AUTH=[REDACTED]"),
        ("CREDENTIALS=Qwerty@995", "CREDENTIALS=[REDACTED]"),
        ("SESSION_COOKIE=Shadow@114", "SESSION_COOKIE=[REDACTED]"),
        ("ACCOUNT_KEY=Autumn1991*", "ACCOUNT_KEY=[REDACTED]"),
        ("LICENSE_KEY=ABCD-1234-EFGH-5678", "LICENSE_KEY=[REDACTED]"),
        ("LDAP_BIND_PW='s3cr3t'", "LDAP_BIND_PW='[REDACTED]'"),
        ("PASSCODE=a51821447503e93a", "PASSCODE=[REDACTED]"),
        (
            "SENTRY_DSN=https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/42",
            "SENTRY_DSN=https://[REDACTED]@o1.ingest.sentry.io/42",
        ),
    ]);
}

#[test]
fn markup_and_pairs() {
    check(&[
        (
            "<password>s3cr3t!</password>",
            "<password>[REDACTED]</password>",
        ),
        (
            r#"<add key="DbPassword" value="Pa55word!" />"#,
            r#"<add key="DbPassword" value="[REDACTED]" />"#,
        ),
        (
            r#"<input type="password" name="pwd" value="hunter22">"#,
            r#"<input type="password" name="pwd" value="[REDACTED]">"#,
        ),
        (
            r#"{"name": "db_password", "value": "Summer2024!"}"#,
            r#"{"name": "db_password", "value": "[REDACTED]"}"#,
        ),
        (
            "- name: DB_PASSWORD\n  value: \"Summer2024!\"\n",
            "- name: DB_PASSWORD\n  value: \"[REDACTED]\"\n",
        ),
        (
            "define('DB_PASSWORD', 'Summer2024!');",
            "define('DB_PASSWORD', '[REDACTED]');",
        ),
    ]);
}

#[test]
fn yaml_values_below_their_key() {
    check(&[
        (
            "smtp:\n  password:\n    Summer2024!\n  port: 587\n",
            "smtp:\n  password:\n    [REDACTED]\n  port: 587\n",
        ),
        (
            "smtp:\n  password: |\n    Summer2024!\n  port: 587\n",
            "smtp:\n  password: |\n    [REDACTED]\n  port: 587\n",
        ),
        (
            "  token: Zx9qL2mN8vB4kR7t\n    Y1wE3uI6oP0aS5dF\n  next: 1\n",
            "  token: [REDACTED]\n  next: 1\n",
        ),
    ]);
}

#[test]
fn command_lines() {
    check(&[
        (
            "mysql -u root -pS3cr3t! appdb",
            "mysql -u root -p[REDACTED] appdb",
        ),
        (
            "mysqldump -uroot -p'S3 cr3t' db",
            "mysqldump -uroot -p'[REDACTED]' db",
        ),
        (
            "sshpass -p hunter22 ssh ada@host",
            "sshpass -p [REDACTED] ssh ada@host",
        ),
        (
            "redis-cli -h cache -a hunter22 ping",
            "redis-cli -h cache -a [REDACTED] ping",
        ),
        (
            "docker login -u ada -p hunter22 ghcr.io",
            "docker login -u ada -p [REDACTED] ghcr.io",
        ),
    ]);
}

#[test]
fn urls_headers_and_encoded_credentials() {
    check(&[
        (
            "GET https://maps.example.com/api?address=x&key=AIzaLikeButShort123",
            "GET https://maps.example.com/api?address=x&key=[REDACTED]",
        ),
        (
            "https://acct.blob.core.windows.net/c?sv=2020-08-04&sig=abc%2Bdef123%3D",
            "https://acct.blob.core.windows.net/c?sv=2020-08-04&sig=[REDACTED]",
        ),
        (
            "Cookie: theme=dark; sessionid=k2j4h5g6f7d8s9a0",
            "Cookie: theme=dark; sessionid=[REDACTED]",
        ),
        (
            "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
            "Authorization: [REDACTED]",
        ),
        // base64("deploy:Summer2024!"), a Docker config `auth`, labelled and not.
        (
            r#"{"auth": "ZGVwbG95OlN1bW1lcjIwMjQh"}"#,
            r#"{"auth": "[REDACTED]"}"#,
        ),
        (
            "echo ZGVwbG95OlN1bW1lcjIwMjQh | base64 -d",
            "echo [REDACTED:high-entropy] | base64 -d",
        ),
    ]);
    // base64 of a key pair: the decoded text holds an AWS key id.
    let encoded = "QVdTX0FDQ0VTU19LRVlfSUQ9QUtJQUlPU0ZPRE5ON0VYQU1QTEUK";
    let out = scrub(encoded);
    assert_eq!(out.text, "[REDACTED:high-entropy]");
}

#[test]
fn keys_split_over_two_lines() {
    let out = scrub("key:\nghp_16C7e42F292c\n6912E7710c838347Ae178B4a\n");
    assert_eq!(out.text, "key:\n[REDACTED]\n[REDACTED]\n");
    assert_eq!(out.redactions.len(), 2);
    assert_eq!(out.redactions[0].kind.as_str(), "github_token");
    let out = scrub("OPENAI_API_KEY=sk-proj-Xa81mQ0zVfT2bL7k\nN4pR9sW6yD3hJ5cG\n");
    assert_eq!(out.text, "OPENAI_API_KEY=[REDACTED]\n[REDACTED]\n");
    check(&[(
        "const apiKey = \"Zx9qL2mN8vB4kR7t\" +\n    \"Y1wE3uI6oP0aS5dF\";",
        "const apiKey = \"[REDACTED]\" +\n    \"[REDACTED]\";",
    )]);
}

#[test]
fn secrets_in_prose() {
    check(&[
        (
            "the admin password is Summer2024!",
            "the admin password is [REDACTED]",
        ),
        ("Password: hunter22", "Password: [REDACTED]"),
        (
            "The API key for staging is AbC123xYz.",
            "The API key for staging is [REDACTED].",
        ),
        (
            "Set the passphrase to `open sesame` first",
            "Set the passphrase to `[REDACTED]` first",
        ),
        (
            "Log in as root with password Tr0ub4dor&3 now",
            "Log in as root with password [REDACTED] now",
        ),
        ("Password for root: hunter", "Password for root: [REDACTED]"),
        (
            "machine api.example.com login ada password hunter",
            "machine api.example.com login ada password [REDACTED]",
        ),
    ]);
}

#[test]
fn hard_negatives_stay() {
    for text in [
        "--- PASS: TestScrubYAMLBlock (0.00s)",
        "auth: fix login redirect loop",
        "The password is stored in the vault.",
        "pass_rate: 0.97\nbypass_cache: true\nauth_method: oauth2\ncredentials: /etc/app/creds.json",
        "        - name: DB_PASSWORD\n          valueFrom:\n            secretKeyRef:\n              key: password\n",
        "password:\n  description: The user password\n  type: string\n",
        "pod/web-5qztccv5lc-io7sq   1/1   Running",
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ada@laptop",
        "\"integrity\": \"sha512-XVo3CIpm2QEh7EQG7rh/H8/fo8ls88Gc+p0PLJlzzTp1cPOgoiIgQW84zXsSUI+MQyebutRDIYA31LJNXY/fCw==\"",
        "https://example.com/search?key=name&order=asc",
        "Cookie: theme=dark; lang=en",
    ] {
        let out = scrub(text);
        assert!(out.is_clean(), "{text:?} -> {:?}", out.text);
    }
}
