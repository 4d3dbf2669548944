//! What a scrub found: [`Scrubbed`], [`Redaction`] and [`RedactionKind`].

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

/// The result of scrubbing one text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scrubbed<'a> {
    /// The scrubbed text: borrowed from the input when nothing was redacted.
    pub text: Cow<'a, str>,
    /// What was redacted, sorted by position, never overlapping. Ranges are byte
    /// ranges in the *input* text.
    pub redactions: Vec<Redaction>,
}

impl Scrubbed<'_> {
    /// True when nothing was redacted (the text is the input, unchanged).
    pub fn is_clean(&self) -> bool {
        self.redactions.is_empty()
    }

    /// The scrubbed text as an owned `String`.
    pub fn into_owned(self) -> String {
        self.text.into_owned()
    }
}

/// One redacted span of the input.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Redaction {
    /// Byte range in the input text that was replaced.
    pub range: Range<usize>,
    /// What kind of secret it was.
    pub kind: RedactionKind,
}

/// What kind of secret a [`Redaction`] removed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RedactionKind {
    /// The value of a key whose name says it is secret (`password=…`, `"token": "…"`).
    Keyword(Keyword),
    /// The credentials of an `Authorization:` header (or a bare `Bearer …` token).
    Authorization,
    /// A key in a provider's well-known format, found with or without a label.
    ApiKey(KeyProvider),
    /// A JSON Web Token (`eyJ….eyJ….sig`).
    Jwt,
    /// A PEM / OpenSSH / PGP private-key block (the whole block is replaced).
    PrivateKey,
    /// The password of a `scheme://user:password@host` URL or a `curl -u user:password`.
    UrlCredentials,
    /// A password hash in the modular crypt format (`$6$salt$hash`, `$2b$12$…`,
    /// `$argon2id$v=19$…`): what `/etc/shadow` and `.htpasswd` hold, enough to guess
    /// the password offline.
    PasswordHash,
    /// An unlabelled string that looks random enough to be a secret.
    HighEntropy,
    /// A match of one of the data rules taken from gitleaks' rule set
    /// (`rules/gitleaks.rules`); the string is the rule's id (`tailscale-api-key`).
    Rule(&'static str),
    /// A match of a user pattern; the string is the pattern's name.
    Custom(Arc<str>),
    /// A secret the program knows by value (a provider key, a token, the value behind
    /// a secret handle), found plain or encoded; the string is the secret's name.
    KnownSecret(Arc<str>),
    /// The whole text was withheld because the scrubber's built-in patterns were
    /// unavailable (fail-closed; never happens with a correct build).
    Unverified,
}

impl RedactionKind {
    /// A stable snake_case name (the CLI's JSON `kind`). For [`RedactionKind::Custom`]
    /// it is the user's pattern name, for [`RedactionKind::Rule`] the rule's id.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Keyword(keyword) => keyword.as_str(),
            Self::Authorization => "authorization",
            Self::ApiKey(provider) => provider.as_str(),
            Self::Jwt => "jwt",
            Self::PrivateKey => "private_key",
            Self::UrlCredentials => "url_credentials",
            Self::PasswordHash => "password_hash",
            Self::HighEntropy => "high_entropy",
            Self::Rule(id) => id,
            Self::Custom(name) | Self::KnownSecret(name) => name,
            Self::Unverified => "unverified",
        }
    }

    /// The text that replaces a redacted span of this kind.
    pub fn replacement(&self) -> &'static str {
        match self {
            Self::PrivateKey => "[REDACTED:private-key]",
            Self::HighEntropy => "[REDACTED:high-entropy]",
            Self::Unverified => "[REDACTED:unverified]",
            _ => "[REDACTED]",
        }
    }
}

impl std::fmt::Display for RedactionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The secret word in a key name that made its value a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Keyword {
    /// `api_key`, `apikey`, `x-api-key`, `apiKey`.
    ApiKey,
    /// `secret`, `client_secret`, `secret_key`.
    Secret,
    /// `token`, `access_token`, `GITHUB_TOKEN`.
    Token,
    /// `password`, `passwd`, `pwd`, `passphrase`, `passcode`, `SMTP_PASS`, `ROOT_PW`.
    Password,
    /// Other key material: `private_key`, `signing_key`, `encryption_key`, `master_key`,
    /// `access_key`, `account_key`, `license_key`, `hmac_key`, …; a `?key=` URL parameter.
    Key,
    /// Credentials under a weaker label: `auth`, `credentials`, `creds` (`BASIC_AUTH`,
    /// a Docker config's `"auth"`).
    Credential,
    /// A session cookie or id: `SESSION_COOKIE`, `sessionid`, a `Cookie:` header.
    Cookie,
}

impl Keyword {
    /// Stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ApiKey => "api_key",
            Self::Secret => "secret",
            Self::Token => "token",
            Self::Password => "password",
            Self::Key => "key",
            Self::Credential => "credential",
            Self::Cookie => "cookie",
        }
    }
}

/// Whose well-known key format matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyProvider {
    /// AWS access key id (`AKIA…`, `ASIA…`).
    AwsAccessKeyId,
    /// AWS secret access key labelled `aws_secret_access_key`.
    AwsSecretAccessKey,
    /// GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`).
    Github,
    /// Slack token (`xoxa-`, `xoxb-`, `xoxp-`, `xoxr-`, `xoxs-`).
    Slack,
    /// OpenAI key (`sk-…`, `sk-proj-…`).
    OpenAi,
    /// Anthropic key (`sk-ant-…`).
    Anthropic,
    /// Google API key (`AIza…`).
    Google,
    /// Stripe secret or restricted key (`sk_live_`, `rk_live_`, `sk_test_`, `rk_test_`).
    Stripe,
    /// GitLab personal access token (`glpat-…`).
    GitLab,
    /// npm access token (`npm_…`).
    Npm,
    /// Hugging Face token (`hf_…`).
    HuggingFace,
    /// SendGrid API key (`SG.….…`).
    SendGrid,
}

impl KeyProvider {
    /// Stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AwsAccessKeyId => "aws_access_key_id",
            Self::AwsSecretAccessKey => "aws_secret_access_key",
            Self::Github => "github_token",
            Self::Slack => "slack_token",
            Self::OpenAi => "openai_api_key",
            Self::Anthropic => "anthropic_api_key",
            Self::Google => "google_api_key",
            Self::Stripe => "stripe_key",
            Self::GitLab => "gitlab_token",
            Self::Npm => "npm_token",
            Self::HuggingFace => "huggingface_token",
            Self::SendGrid => "sendgrid_api_key",
        }
    }
}
