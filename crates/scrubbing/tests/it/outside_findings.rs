//! Each finding of issue 31 (the scrubber on other projects' rule tests) and issue 26
//! item 6 (encoded secrets), performed through `scrub`. The values here are made up
//! for these tests; the shapes are the ones the findings named.

use oxydra_scrubbing::scrub;

/// `text` scrubbed is `expected`.
fn check(text: &str, expected: &str) {
    assert_eq!(scrub(text).text, expected, "input: {text}");
}

/// `text` passes through unchanged.
fn clean(text: &str) {
    assert_eq!(scrub(text).text, text, "input: {text}");
}

const SECRET: &str = "Zq8Lm2Vx9Tb4Nc7Rw1Ky6Hd";

#[test]
fn the_six_labelling_syntaxes() {
    for (before, after) in [
        ("var xToken string = \"", "\""),
        ("xToken := `", "`"),
        ("$xToken .= \"", "\""),
        ("x_TOKEN ::= \"", "\""),
        ("x_TOKEN :::= \"", "\""),
        ("x_TOKEN ?= \"", "\""),
        ("let xToken: string = '", "'"),
        ("char secret[25] = \"", "\";"),
        ("if (api_key == \"", "\") {"),
    ] {
        check(
            &format!("{before}{SECRET}{after}"),
            &format!("{before}[REDACTED]{after}"),
        );
    }
}

#[test]
fn a_value_is_redacted_whole_or_not_at_all() {
    for value in [
        "SG.-4ajvzb=Zx9qL2mN8vB4kR7tY1wE3uI6=hj1o519iw",
        "pk.Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF.t12s2u8p7s3c",
        "hvs.CAESIP2jTxc9S2K7Z6CtcFWQv7-044m_oSsxnPE1H3nF",
        "qpF8Q~PCM5MhMoyTFc5TYEomnYRUKim9UJhe8a2P",
    ] {
        // A data rule (gitleaks' Azure AD client secret) or the entropy layer: either
        // way the whole value goes.
        let out = scrub(&format!("value {value} end")).into_owned();
        assert!(
            out == "value [REDACTED:high-entropy] end" || out == "value [REDACTED] end",
            "{value} -> {out}"
        );
    }
}

#[test]
fn dotted_and_prefixed_tokens_are_values() {
    check(
        "airtableToken=patgci64hvpubrhep.e33f14ebbde3276b23f8d63434d8712cef27b9feed0032e0",
        "airtableToken=[REDACTED]",
    );
    check(
        "harnessToken=pat.Zx9qL2mN8vB4kR7t.Y1wE3uI6oP0aS5dF",
        "harnessToken=[REDACTED]",
    );
    check(
        "db_pass: m{{h}o)p${e]nob(ody[finds>-_$#thisone}},",
        "db_pass: [REDACTED],",
    );
    check(
        "discord_token: 354549739191190400",
        "discord_token: [REDACTED]",
    );
    clean("max_tokens: 4096");
}

#[test]
fn code_and_configuration_that_hold_no_secret() {
    for text in [
        "const MONGO_NO_AUTH = \"mongodb://localhost:27017/database\"",
        "notes = \"Maven - io.jsonwebtoken:jjwt-jackson-0.11.2\"",
        "- (id)hf_requiredCharacteristicTypesForDisplayMetadata;",
        "  M_UINT(x, H_PRIO, 2, &hf_servingcellpriorityparametersdescription_h_prio),",
        "secretKey: api-key",
        "passwordVariable: 'PASSWORD'",
        "GET /create?access_token=ACCESS_TOKEN",
        "password: xxxx",
        "CLOUD_APIKEY: \"insert_key_here\"",
        "DB_PASSWORD=YOUR_PASSWORD",
        "token: \"<your-token>\"",
        "API key:  export OPENAI_API_KEY in your shell",
        "  1. an API key:  export OPENAI_API_KEY=sk-...  (or ANTHROPIC_API_KEY=sk-ant-..., GEMINI_API_KEY=AIza...)",
        "api_key = \"a-fake-api-key\"",
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "curl -u username:token https://x.io",
        "SUMO_ACCESS_KEY=`etcdctl get /sumologic_secret`",
        "telegram_api_token = \"<xsd:element name=\"Code\" type=\"x:CodeType\"/>\"",
        "xoxb-xoxb-my-bot-token",
        "kind: ConfigMap\n  key: secret/mysecret\n  secretKey: foo",
    ] {
        clean(text);
    }
}

#[test]
fn a_pem_block_is_bounded() {
    let body = "MIIEowIBAAKCAQEAx4Xq1yVjQ9a3Zk2mN8vB4kR7tY1wE3uI6oP0aS5dF";
    let text = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{body}\n----END RSA PRIVATE KEY-----\ncase 2: keep me\nport = 8080\n-----END RSA PRIVATE KEY-----\n"
    );
    let out = scrub(&text);
    assert!(
        out.text.contains("case 2: keep me\nport = 8080"),
        "{}",
        out.text
    );
    assert!(!out.text.contains(body));
    clean("-----BEGIN PRIVATE KEY-----\nanything\n-----END PRIVATE KEY-----");
}

#[test]
fn adversarial_labels_and_shapes() {
    check(
        "WEBHOOK_URL=https://hooks.slack.com/services/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",
        "WEBHOOK_URL=[REDACTED]",
    );
    check("SALT=Zx9qL2mN8vB4kR7tY1wE3", "SALT=[REDACTED]");
    check(
        "OAUTH_REFRESH=1//0gZx9qL2mN8vB4",
        "OAUTH_REFRESH=[REDACTED]",
    );
    check(
        "{\\\\\\\"token\\\\\\\": \\\\\\\"ab12cd34ef56\\\\\\\"}",
        "{\\\\\\\"token\\\\\\\": \\\\\\\"[REDACTED]\\\\\\\"}",
    );
    clean("WEBHOOK_URL=https://example.com/hooks/deploy");
}

#[test]
fn encoded_secrets() {
    // Issue 26.6: `key = "<64 hex>"`, a hex-encoded key, a token written with spaces.
    let hex64 = "9b1d3c5e7f2a4b6c8d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e";
    check(&format!("key = \"{hex64}\""), "key = \"[REDACTED]\"");
    check(&format!("sl_key: {hex64}"), "sl_key: [REDACTED]");
    check("key: bXlwYXNzd29yZA==", "key: [REDACTED]");
    clean("key: user_id");
    let encoded: String = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    check(
        &format!("blob {encoded} end"),
        "blob [REDACTED:high-entropy] end",
    );
    check("token: AB12 CD34 EF56 GH78 done", "token: [REDACTED] done");
    // A hash stays.
    clean("sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
