//! The layer behind a redaction, as the examples count them.

/// The scrubber's layer behind a redaction, without the rule or provider it names;
/// for a labelled value, the kind of label (`labelled (token)`).
pub fn layer(kind: &oxydra_scrubbing::RedactionKind) -> String {
    use oxydra_scrubbing::RedactionKind as K;
    let name = match kind {
        K::Keyword(keyword) => return format!("labelled ({})", keyword.as_str()),
        K::Authorization => "authorization",
        K::ApiKey(_) | K::Jwt | K::PasswordHash => "built-in format",
        K::PrivateKey => "private key",
        K::UrlCredentials => "url credentials",
        K::HighEntropy => "high entropy",
        K::Rule(_) => "gitleaks rule",
        _ => "other",
    };
    name.to_owned()
}
