//! gitleaks' rule set (`rules/gitleaks.rules`) through `scrub`: formats the rules
//! written for this crate never named, each redacted whole with its rule's id as
//! the kind, its label kept. The values are made up for these tests.

use oxydra_scrubbing::{RedactionKind, scrub};

/// `text` holds `secret` once; after scrubbing, the secret is gone whole, the rest of
/// the text stays, and a redaction of kind `kind` covers it.
fn redacted(text: &str, secret: &str, kind: &str) {
    let out = scrub(text);
    let at = text.find(secret).unwrap();
    let expected = format!("{}[REDACTED]{}", &text[..at], &text[at + secret.len()..]);
    assert_eq!(out.text, expected, "input: {text}");
    assert!(
        out.redactions
            .iter()
            .any(|r| r.kind.as_str() == kind && r.range == (at..at + secret.len())),
        "{text}: {:?}",
        out.redactions
    );
}

#[test]
fn provider_formats_from_the_rule_set() {
    let pplx = "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";
    redacted(&format!("PPLX={pplx}\n"), pplx, "perplexity-api-key");
    let glsa = "glsa_Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF_0a1b2c3d";
    redacted(
        &format!("grafana:\n  token: \"{glsa}\"\n"),
        glsa,
        "grafana-service-account-token",
    );
    let nrak = "NRAK-7q2m9x4k1v8b3n6z0c5l2j8h4gf";
    redacted(
        &format!("NEW_RELIC_USER_KEY = {nrak}\n"),
        nrak,
        "new-relic-user-api-key",
    );
    let dop = "dp.pt.k7psT2mQx9LbV4nZ8rW1cY6hJ3dF5gA0sE2uI9oP7lK";
    redacted(
        &format!("doppler run --token {dop}"),
        dop,
        "doppler-api-token",
    );
}

#[test]
fn a_webhook_url_goes_whole_not_one_uuid_of_it() {
    // The rule's only groups are repeated (`([a-z0-9]{4}-){3}`): each captures one
    // repetition, so the secret is the whole match.
    let hook = "https://contoso.webhook.office.com/webhookb2/1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d@6d5c4b3a-2f1e-0d9c-8b7a-6f5e4d3c2b1a/IncomingWebhook/0f1e2d3c4b5a69788796a5b4c3d2e1f0/9a8b7c6d-5e4f-3a2b-1c0d-9e8f7a6b5c4d";
    let text = format!("posting to {hook} now");
    let out = scrub(&text);
    assert_eq!(out.text, "posting to [REDACTED] now");
    assert!(matches!(out.redactions[0].kind, RedactionKind::Rule(_)));
}

#[test]
fn near_misses_and_placeholders_stay() {
    for text in [
        // Too short for the format.
        "PPLX=pplx-abc123",
        // A template placeholder (gitleaks' global allowlist).
        "grafana_token: ${GRAFANA_TOKEN}",
        // Prose naming a provider, no value.
        "Perplexity and Grafana tokens are configured in the vault.",
        // The keyword alone, many times (the rules run, find nothing).
        &"pplx- glsa_ NRAK- dp.pt. ".repeat(2000),
    ] {
        assert!(scrub(text).is_clean(), "{text:.80}");
    }
}
