//! The public API: ranges, kinds, borrowing, user patterns, errors, idempotence, UTF-8.

use std::borrow::Cow;

use oxydra_scrubbing::{
    KeyProvider, Keyword, Redaction, RedactionKind, ScrubError, Scrubber, scrub,
};

#[test]
fn ranges_point_at_the_secrets_in_the_input() {
    let text = "user=ada password=hunter22 key AKIAIOSFODNN7EXAMPLE ok";
    let out = scrub(text);
    assert_eq!(
        out.redactions,
        vec![
            Redaction {
                range: 18..26,
                kind: RedactionKind::Keyword(Keyword::Password)
            },
            Redaction {
                range: 31..51,
                kind: RedactionKind::ApiKey(KeyProvider::AwsAccessKeyId)
            },
        ]
    );
    assert_eq!(&text[18..26], "hunter22");
    assert_eq!(&text[31..51], "AKIAIOSFODNN7EXAMPLE");
    assert_eq!(out.text, "user=ada password=[REDACTED] key [REDACTED] ok");
}

#[test]
fn specific_format_wins_a_tie_with_its_label() {
    let out = scrub("export GITHUB_TOKEN=ghp_4f9Kd8sLqX2vNw7ZyT1mR0aB3cE5gH6jP9uQ");
    assert_eq!(out.redactions.len(), 1);
    assert_eq!(
        out.redactions[0].kind,
        RedactionKind::ApiKey(KeyProvider::Github)
    );
    assert_eq!(out.redactions[0].kind.as_str(), "github_token");

    let out = scrub("Authorization: Bearer sk-proj-Xa81mQ0zVfT2bL7kN4pR9sW6yD3hJ5cG");
    assert_eq!(
        out.redactions[0].kind,
        RedactionKind::ApiKey(KeyProvider::OpenAi)
    );

    let out = scrub("Authorization: Bearer opaque.token-value_123");
    assert_eq!(out.redactions[0].kind, RedactionKind::Authorization);

    let out = scrub("key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789");
    assert_eq!(
        out.redactions[0].kind,
        RedactionKind::ApiKey(KeyProvider::Anthropic)
    );
}

#[test]
fn overlapping_matches_merge_into_one_redaction() {
    // The labelled value and the PEM block (its escaped line breaks read as breaks)
    // start at the same byte; one redaction covers the block, nothing of it survives,
    // and the escape after it is kept.
    let text = r#"{"private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN\n-----END PRIVATE KEY-----\n"}"#;
    let out = scrub(text);
    assert_eq!(out.redactions.len(), 1);
    assert_eq!(out.redactions[0].kind, RedactionKind::PrivateKey);
    assert_eq!(out.text, r#"{"private_key": "[REDACTED:private-key]\n"}"#);
}

#[test]
fn redactions_are_sorted_disjoint_and_on_char_boundaries() {
    let text = "ключ password=пароль123 ✓ token: \"日本語トークン\" ghp_4f9Kd8sLqX2vNw7ZyT1mR0aB3cE5gH6jP9uQ → fin";
    let out = scrub(text);
    assert_eq!(
        out.text,
        "ключ password=[REDACTED] ✓ token: \"[REDACTED]\" [REDACTED] → fin"
    );
    let mut previous_end = 0;
    for redaction in &out.redactions {
        assert!(redaction.range.start >= previous_end);
        assert!(text.is_char_boundary(redaction.range.start));
        assert!(text.is_char_boundary(redaction.range.end));
        previous_end = redaction.range.end;
    }
    assert_eq!(&text[out.redactions[0].range.clone()], "пароль123");
    assert_eq!(&text[out.redactions[1].range.clone()], "日本語トークン");
}

#[test]
fn multibyte_text_next_to_high_entropy_and_urls() {
    let out = scrub("日本Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF語 — postgres://u:pässwörd@h/db");
    assert_eq!(
        out.text,
        "日本[REDACTED:high-entropy]語 — postgres://u:[REDACTED]@h/db"
    );
}

#[test]
fn clean_text_is_borrowed_without_redactions() {
    let text = "cargo build --release\n    Finished `release` profile in 3.2s";
    let out = scrub(text);
    assert!(matches!(out.text, Cow::Borrowed(s) if std::ptr::eq(s, text)));
    assert!(out.redactions.is_empty());
    assert_eq!(out.redactions.capacity(), 0);
    assert!(out.is_clean());
    assert_eq!(out.into_owned(), text);
}

#[test]
fn dirty_text_is_owned() {
    let out = scrub("password=hunter22");
    assert!(matches!(out.text, Cow::Owned(_)));
    assert!(!out.is_clean());
    assert_eq!(out.into_owned(), "password=[REDACTED]");
}

#[test]
fn idempotent_on_a_mixed_document() {
    let document = concat!(
        "# deploy log\n",
        "export GITHUB_TOKEN=ghp_4f9Kd8sLqX2vNw7ZyT1mR0aB3cE5gH6jP9uQ\n",
        "{\"api_key\": \"sk-proj-Xa81mQ0zVfT2bL7kN4pR9sW6yD3hJ5cG\", \"max_tokens\": 1024}\n",
        "curl -H 'Authorization: Bearer abc123def456ghi789' -u admin:hunter22 https://x.io\n",
        "DATABASE_URL=postgres://app:s3cr3t@db:5432/app\n",
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n",
        "worker key Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF\n",
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\n",
    );
    let once = scrub(document).into_owned();
    assert_eq!(
        once,
        concat!(
            "# deploy log\n",
            "export GITHUB_TOKEN=[REDACTED]\n",
            "{\"api_key\": \"[REDACTED]\", \"max_tokens\": 1024}\n",
            "curl -H 'Authorization: Bearer [REDACTED]' -u admin:[REDACTED] https://x.io\n",
            "DATABASE_URL=postgres://app:[REDACTED]@db:5432/app\n",
            "[REDACTED:private-key]\n",
            "worker key [REDACTED:high-entropy]\n",
            "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\n",
        )
    );
    let twice = scrub(&once);
    assert!(twice.is_clean(), "{:?}", twice.redactions);
    assert_eq!(twice.text, once);
}

#[test]
fn user_patterns_redact_whole_match_or_secret_group() {
    let scrubber = Scrubber::with_patterns([
        ("employee_id", r"EMP-\d{6}"),
        ("ticket_pin", r"pin #(?P<secret>\d{4})"),
    ])
    .unwrap();
    let out = scrubber.scrub("badge EMP-123456, door pin #4321, password=hunter22");
    assert_eq!(
        out.text,
        "badge [REDACTED], door pin #[REDACTED], password=[REDACTED]"
    );
    let kinds: Vec<&str> = out.redactions.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds, ["employee_id", "ticket_pin", "password"]);
    assert_eq!(
        out.redactions[0].kind,
        RedactionKind::Custom("employee_id".into())
    );
    // The user patterns do not change clean text.
    assert!(scrubber.scrub("nothing here").is_clean());
}

#[test]
fn invalid_user_pattern_is_an_error_naming_it() {
    let err = Scrubber::with_patterns([("ok", r"abc"), ("broken_one", r"(unclosed")]).unwrap_err();
    match &err {
        ScrubError::InvalidPattern { name, .. } => assert_eq!(name, "broken_one"),
        other => panic!("unexpected error {other:?}"),
    }
    assert!(err.to_string().contains("broken_one"), "{err}");
}

#[test]
fn empty_matching_or_unnamed_patterns_are_errors() {
    let err = Scrubber::with_patterns([("maybe", r"x*")]).unwrap_err();
    assert!(matches!(err, ScrubError::MatchesEmpty { ref name } if name == "maybe"));
    let err = Scrubber::with_patterns([("", r"abc")]).unwrap_err();
    assert!(matches!(err, ScrubError::EmptyName { ref pattern } if pattern == "abc"));
}

#[test]
fn entropy_detection_can_be_disabled() {
    let text = "worker key Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF password=hunter22";
    let scrubber = Scrubber::new().with_entropy_detection(false);
    assert!(!scrubber.entropy_detection());
    assert_eq!(
        scrubber.scrub(text).text,
        "worker key Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF password=[REDACTED]"
    );
    assert!(Scrubber::default().entropy_detection());
    assert_eq!(
        Scrubber::default().scrub(text).text,
        "worker key [REDACTED:high-entropy] password=[REDACTED]"
    );
    let with_user = Scrubber::with_patterns([("x", "zzz")]).unwrap();
    assert!(with_user.entropy_detection());
}

#[test]
fn kind_names_are_stable_snake_case() {
    let names: Vec<String> = [
        RedactionKind::Keyword(Keyword::ApiKey),
        RedactionKind::Keyword(Keyword::Secret),
        RedactionKind::Keyword(Keyword::Token),
        RedactionKind::Keyword(Keyword::Password),
        RedactionKind::Keyword(Keyword::Key),
        RedactionKind::Authorization,
        RedactionKind::ApiKey(KeyProvider::AwsAccessKeyId),
        RedactionKind::ApiKey(KeyProvider::AwsSecretAccessKey),
        RedactionKind::ApiKey(KeyProvider::Github),
        RedactionKind::ApiKey(KeyProvider::Slack),
        RedactionKind::ApiKey(KeyProvider::OpenAi),
        RedactionKind::ApiKey(KeyProvider::Anthropic),
        RedactionKind::ApiKey(KeyProvider::Google),
        RedactionKind::ApiKey(KeyProvider::Stripe),
        RedactionKind::Jwt,
        RedactionKind::PrivateKey,
        RedactionKind::UrlCredentials,
        RedactionKind::PasswordHash,
        RedactionKind::HighEntropy,
        RedactionKind::Unverified,
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(
        names,
        [
            "api_key",
            "secret",
            "token",
            "password",
            "key",
            "authorization",
            "aws_access_key_id",
            "aws_secret_access_key",
            "github_token",
            "slack_token",
            "openai_api_key",
            "anthropic_api_key",
            "google_api_key",
            "stripe_key",
            "jwt",
            "private_key",
            "url_credentials",
            "password_hash",
            "high_entropy",
            "unverified",
        ]
    );
}

#[test]
fn scrubber_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<Scrubber>();
    let scrubber = Scrubber::with_patterns([("pin", r"PIN-\d{4}")]).unwrap();
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let scrubber = scrubber.clone();
            std::thread::spawn(move || {
                scrubber
                    .scrub(&format!("PIN-000{i} password=x{i}yz"))
                    .into_owned()
            })
        })
        .collect();
    for (i, handle) in handles.into_iter().enumerate() {
        assert_eq!(
            handle.join().unwrap(),
            "[REDACTED] password=[REDACTED]",
            "thread {i}"
        );
    }
}

#[test]
fn warming_up_beside_the_first_scrubs_changes_no_result() {
    // The warm-up builds the patterns while other threads scrub for the first time:
    // each waits for what is being built and finds what it would have found alone.
    let texts = [
        r#"{"user": "ada", "password": "correct horse battery"}"#,
        "export GITHUB_TOKEN=ghp_R8mKq2vT9xLw4nZp7sYc1bVd3fGh6jKl0aQe",
        "cargo test: 42 passed",
    ];
    let barrier = std::sync::Barrier::new(texts.len() + 1);
    let results: Vec<String> = std::thread::scope(|scope| {
        let warm = scope.spawn(|| {
            barrier.wait();
            oxydra_scrubbing::warm_up();
        });
        let scrubs: Vec<_> = texts
            .iter()
            .map(|text| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    oxydra_scrubbing::scrub(text).text.into_owned()
                })
            })
            .collect();
        warm.join().unwrap();
        scrubs.into_iter().map(|s| s.join().unwrap()).collect()
    });
    oxydra_scrubbing::warm_up();
    let again: Vec<String> = texts
        .iter()
        .map(|text| oxydra_scrubbing::scrub(text).text.into_owned())
        .collect();
    assert_eq!(results, again);
    assert_eq!(results[0], r#"{"user": "ada", "password": "[REDACTED]"}"#);
    assert!(!results[1].contains("ghp_R8mKq2"), "{}", results[1]);
    assert_eq!(results[2], "cargo test: 42 passed");
}
