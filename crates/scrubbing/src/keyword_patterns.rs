//! The built-in patterns: labelled values, authorization headers, command-line
//! passwords, private-key blocks, credentials in URLs and well-known key formats.
//!
//! The patterns' literal *triggers* (the pre-filter: they say which patterns can
//! occur in the text at all) are found by one keyword pass (`keyword_scan`), built
//! once, in a [`LazyLock`], on the first scrub, which also finds the labelled values'
//! trigger words and the gitleaks rules' keywords. Each pattern's own [`Regex`]es are
//! compiled the first time the pass reports the pattern ([`LazyRegex`]), and run only
//! then, to find positions. Most texts hold no trigger, so most patterns are never
//! compiled in a short run; one that does not compile makes the scrub that needed it
//! fail closed ([`Unavailable`]). Patterns with a literal prefix run over the whole
//! text; the single-line header and command patterns run only on the lines where
//! their trigger occurs; the labelled-value patterns are driven by the trigger words'
//! hits (see `labelled`).

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::key_names::KeyInfo;
use crate::keyword_scan::{Hits, KeywordScanner};
use crate::labelled::{collect_labelled, labelled_value};
use crate::lazy_regex::{LazyRegex, Unavailable};
use crate::merge::{Candidate, PRIORITY_KEYWORD};
use crate::placeholder::{is_placeholder, is_placeholder_words};
use crate::redaction::{KeyProvider, Keyword, RedactionKind};
use crate::secret_name::is_name_not_value;
use crate::value_filter::{ValueShape, is_non_secret_value};
use crate::value_syntax::{BARE_FLAG_VALUE, VALUE};

mod defs;

#[cfg(test)]
use defs::{FixedKind, KEYWORD_TRIGGER};
use defs::{PatternDef, Rule, pattern_defs};

/// How a `user:password` pair's password is judged: it must look like data.
const WEAK_PASSWORD: KeyInfo = KeyInfo {
    keyword: Keyword::Password,
    is_pwd: false,
    weak: true,
    encoded: false,
};

/// One built-in pattern, its expressions compiled on first use.
struct Compiled {
    regex: LazyRegex,
    rule: Rule,
    /// For single-line patterns without a literal prefix: the trigger as a regex. The
    /// pattern then runs only on the lines where its trigger occurs.
    line_trigger: Option<LazyRegex>,
    /// For labelled values: the value pattern anchored at the start (`\A`), run from
    /// the end of the separator after each key found around a trigger hit.
    anchored: Option<LazyRegex>,
    /// Run without asking the pre-filter: the keyword trigger's own search is as
    /// cheap as the set's, and its frequent short literals (`pw`, `key`) would slow
    /// the set's search for the rare ones.
    always: bool,
}

/// The built-in patterns: the pre-filter compiled, the patterns on first use.
pub(crate) struct Builtins {
    /// Pre-filter: one keyword pass over the text finds the patterns' literal
    /// triggers (and the labelled trigger words and gitleaks' rule keywords).
    scanner: KeywordScanner,
    patterns: Vec<Compiled>,
}

static BUILTINS: LazyLock<Result<Builtins, String>> = LazyLock::new(build);

/// The literals of a pattern's trigger (`ghp_|gho_` → `ghp_`, `gho_`).
fn trigger_literals(trigger: &'static str) -> impl Iterator<Item = &'static str> {
    trigger.split('|')
}

/// What the built-in scanner is built from: each rule's keywords and the patterns'
/// literal triggers.
type ScannerInputs = (Vec<&'static [&'static str]>, Vec<(usize, &'static str)>);

/// The inputs of the built-in scanner for the patterns `defs`.
fn scanner_inputs(defs: &[PatternDef]) -> Result<ScannerInputs, String> {
    let rules = crate::rule_data::rules().map_err(|_| "the rule data is malformed".to_owned())?;
    let triggers: Vec<(usize, &'static str)> = defs
        .iter()
        .enumerate()
        // The labelled values' trigger words are `keyword_scan::LABEL_WORDS`.
        .filter(|(_, d)| !matches!(d.rule, Rule::Labelled))
        .flat_map(|(index, d)| trigger_literals(d.trigger).map(move |t| (index, t)))
        .collect();
    let keywords = rules.rules.iter().map(|r| r.keywords.as_slice()).collect();
    Ok((keywords, triggers))
}

/// The pre-filter compiled, every pattern ready to compile.
fn build() -> Result<Builtins, String> {
    let defs = pattern_defs();
    let (keywords, triggers) = scanner_inputs(&defs)?;
    let scanner = KeywordScanner::build(keywords.into_iter(), triggers.into_iter())
        .ok_or_else(|| "the keyword automaton could not be built".to_owned())?;
    let patterns = defs
        .into_iter()
        .map(|d| {
            // The labelled values' trigger words are found by `keyword_scan`.
            let line_trigger = match d.rule {
                Rule::LabelledFlag
                | Rule::Authorization
                | Rule::BareBearer
                | Rule::Cli
                | Rule::UserThenPassword
                | Rule::CredentialPair
                | Rule::ConnectCall => Some(LazyRegex::new(
                    trigger_literals(d.trigger)
                        .map(regex::escape)
                        .collect::<Vec<_>>()
                        .join("|"),
                )),
                _ => None,
            };
            let anchored = match d.rule {
                Rule::Labelled => Some(LazyRegex::new(format!(r"\A{VALUE}"))),
                Rule::LabelledFlag => Some(LazyRegex::new(format!(r"\A{BARE_FLAG_VALUE}"))),
                _ => None,
            };
            Compiled {
                regex: LazyRegex::new(d.regex),
                rule: d.rule,
                line_trigger,
                anchored,
                always: matches!(d.rule, Rule::Labelled),
            }
        })
        .collect();
    Ok(Builtins { scanner, patterns })
}

/// The built-in patterns: their pre-filter compiled on first use, each pattern when
/// first needed.
pub(crate) fn builtins() -> Result<&'static Builtins, &'static str> {
    BUILTINS.as_ref().map_err(String::as_str)
}

/// Every keyword of `text` in one pass (`keyword_scan`): the labelled trigger words,
/// the built-in patterns' triggers and the gitleaks rules' keywords.
pub(crate) fn scan(text: &str) -> Result<Hits, Unavailable> {
    Ok(builtins().map_err(|_| Unavailable)?.scanner.scan(text))
}

/// Pushes every built-in match in `text` onto `out`; `Err` when the pre-filter or a
/// pattern the text needed did not compile (the caller must fail closed).
pub(crate) fn collect_builtins(text: &str, out: &mut Vec<Candidate>) -> Result<(), Unavailable> {
    let builtins = builtins().map_err(|_| Unavailable)?;
    builtins.collect_with(text, &builtins.scanner.scan(text), out)
}

/// [`collect_builtins`] given the keyword pass over `text` ([`scan`]).
pub(crate) fn collect_builtins_with(
    text: &str,
    hits: &Hits,
    out: &mut Vec<Candidate>,
) -> Result<(), Unavailable> {
    builtins()
        .map_err(|_| Unavailable)?
        .collect_with(text, hits, out)
}

impl Builtins {
    /// Pushes every built-in match in `text` onto `out`. `Err` when a pattern the text
    /// needed did not compile: the caller must not trust what was found.
    #[cfg(test)]
    pub(crate) fn collect(&self, text: &str, out: &mut Vec<Candidate>) -> Result<(), Unavailable> {
        self.collect_with(text, &self.scanner.scan(text), out)
    }

    /// Pushes every built-in match in `text` onto `out`, given the keyword pass over
    /// it: the labelled values from its trigger words, the other patterns whose
    /// trigger it found, in pattern order.
    pub(crate) fn collect_with(
        &self,
        text: &str,
        hits: &Hits,
        out: &mut Vec<Candidate>,
    ) -> Result<(), Unavailable> {
        // The labelled values first, then the triggered patterns (the order of
        // equal candidates decides which kind a tie keeps).
        for (index, pattern) in self.patterns.iter().enumerate() {
            if pattern.always {
                run(index, pattern, text, &hits.labels, out)?;
            }
        }
        for (index, pattern) in self.patterns.iter().enumerate() {
            if !pattern.always && hits.triggers(index) {
                run(index, pattern, text, &hits.labels, out)?;
            }
        }
        Ok(())
    }
}

/// Runs built-in pattern number `index` over `text`.
fn run(
    index: usize,
    pattern: &Compiled,
    text: &str,
    labels: &[Range<usize>],
    out: &mut Vec<Candidate>,
) -> Result<(), Unavailable> {
    let priority = u16::try_from(index).unwrap_or(u16::MAX);
    match (&pattern.line_trigger, &pattern.anchored) {
        // The labelled values: their trigger words come from the keyword pass.
        (None, Some(anchored)) => {
            collect_labelled(text, labels.iter().cloned(), anchored, true, out)?;
        }
        (Some(trigger), Some(anchored)) => collect_labelled(
            text,
            trigger.get()?.find_iter(text).map(|m| m.range()),
            anchored,
            false,
            out,
        )?,
        (Some(trigger), None) => {
            let mut done_until = 0;
            for hit in trigger.get()?.find_iter(text) {
                if hit.start() < done_until {
                    continue;
                }
                let (line_start, line_end) = line_around(text, hit.start(), hit.end());
                if let Some(line) = text.get(line_start..line_end) {
                    collect_pattern(
                        line,
                        line_start,
                        pattern.regex.get()?,
                        pattern.rule,
                        priority,
                        out,
                    );
                }
                done_until = line_end;
            }
        }
        _ if matches!(pattern.rule, Rule::PrivateKeyBlock) => {
            crate::pem::collect(text, priority, out);
        }
        _ => collect_pattern(text, 0, pattern.regex.get()?, pattern.rule, priority, out),
    }
    Ok(())
}

/// The byte range of the line(s) containing `start..end`, without the newlines.
fn line_around(text: &str, start: usize, end: usize) -> (usize, usize) {
    let line_start = text
        .get(..start)
        .and_then(|before| before.rfind('\n'))
        .map_or(0, |i| i + 1);
    let line_end = text
        .get(end..)
        .and_then(|after| after.find('\n'))
        .map_or(text.len(), |i| end + i);
    (line_start, line_end)
}

/// Hands `push` the range of each match's group `secret` that `keep` holds of (given
/// the match's captures and the secret's text).
fn push_secrets(
    regex: &Regex,
    text: &str,
    keep: impl Fn(&regex::Captures<'_>, &str) -> bool,
    mut push: impl FnMut(Range<usize>),
) {
    for caps in regex.captures_iter(text) {
        if let Some(secret) = caps.name("secret")
            && keep(&caps, secret.as_str())
        {
            push(secret.range());
        }
    }
}

/// Runs one pattern over `text` (which starts at byte `offset` of the scrubbed text).
fn collect_pattern(
    text: &str,
    offset: usize,
    regex: &Regex,
    rule: Rule,
    priority: u16,
    out: &mut Vec<Candidate>,
) {
    let mut push = |range: Range<usize>, kind, priority| {
        out.push(Candidate {
            range: range.start + offset..range.end + offset,
            kind,
            priority,
        });
    };
    match rule {
        Rule::Whole(kind) => {
            for m in regex.find_iter(text) {
                if !is_placeholder(m.as_str()) {
                    push(m.range(), kind.kind(), priority);
                }
            }
        }
        Rule::Words(kind) => {
            // The part after the prefix must not be words (`hf_requiredTypes` is a C
            // identifier) and the match must not go on as an identifier (`…_h_prio`).
            for m in regex.find_iter(text) {
                let body = m.as_str().split_once('_').map_or(m.as_str(), |(_, b)| b);
                let next = text.as_bytes().get(m.end());
                if !is_placeholder(m.as_str())
                    && !crate::word_shape::is_words(body)
                    && next != Some(&b'_')
                {
                    push(m.range(), kind.kind(), priority);
                }
            }
        }
        Rule::OpenAi => {
            for m in regex.find_iter(text) {
                if m.as_str().bytes().any(|b| b.is_ascii_digit()) {
                    push(
                        m.range(),
                        RedactionKind::ApiKey(KeyProvider::OpenAi),
                        priority,
                    );
                }
            }
        }
        Rule::Group(kind) => push_secrets(
            regex,
            text,
            |_, secret| !is_placeholder(secret),
            |range| push(range, kind.kind(), priority),
        ),
        Rule::DeviceConfig => push_secrets(
            regex,
            text,
            |caps, secret| match caps.name("kind") {
                Some(kind) => crate::device_config::is_typed_secret(kind.as_str(), secret),
                None => crate::device_config::is_community(secret),
            },
            |range| push(range, RedactionKind::Keyword(Keyword::Password), priority),
        ),
        Rule::SeedPhrase => push_secrets(
            regex,
            text,
            |_, secret| crate::seed_phrase::is_seed_phrase(secret),
            |range| push(range, RedactionKind::Keyword(Keyword::Key), priority),
        ),
        // `curl -u user:pass`: a password that is a word (`test:test`,
        // `username:token`, `user:pass`) is an example, not a credential.
        Rule::UserPassword => push_secrets(
            regex,
            text,
            |_, secret| !is_non_secret_value(secret, WEAK_PASSWORD, ValueShape::Quoted),
            |range| push(range, RedactionKind::Keyword(Keyword::Password), priority),
        ),
        Rule::Authorization | Rule::BareBearer => {
            for caps in regex.captures_iter(text) {
                let Some(secret) = caps.name("secret") else {
                    continue;
                };
                // Everything after the scheme is credentials (`AWS4-HMAC-SHA256
                // Credential=…, Signature=…`), up to a quote or the line end.
                let value = secret.as_str().trim_end();
                let range = secret.start()..secret.start() + value.len();
                let is_scheme = ["bearer", "basic", "token", "bot"]
                    .iter()
                    .any(|s| value.eq_ignore_ascii_case(s));
                // Code, not a header: `authorization: Option<String>`,
                // `authorization: header_text("authorization")`.
                // `Authorization::{…}`: a path (`::`), not a header's `:`.
                let is_code = value.contains('(')
                    || value.starts_with(':')
                    || text.as_bytes().get(secret.end()) == Some(&b'<');
                let wanted = match rule {
                    Rule::BareBearer => value.bytes().any(|b| b.is_ascii_digit()),
                    _ => value.len() >= 3 && !is_scheme && !is_code,
                };
                if wanted && !is_placeholder_credentials(value) {
                    push(range, RedactionKind::Authorization, priority);
                }
            }
        }
        Rule::Cli | Rule::UserThenPassword => {
            for caps in regex.captures_iter(text) {
                let Some(value) = caps.name("sq").or(caps.name("dq")).or(caps.name("uv")) else {
                    continue;
                };
                let v = value.as_str();
                let other_meaning = matches!(rule, Rule::UserThenPassword)
                    && crate::user_flag::is_other_p_value(
                        v,
                        caps.name("user").map_or("", |u| u.as_str()),
                    );
                if v.chars().count() >= 3 && !other_meaning && !is_placeholder(v) {
                    push(
                        value.range(),
                        RedactionKind::Keyword(Keyword::Password),
                        PRIORITY_KEYWORD,
                    );
                }
            }
        }
        Rule::CredentialPair | Rule::ConnectCall => {
            let names: fn(&str) -> bool = if matches!(rule, Rule::ConnectCall) {
                crate::credential_call::names_connection
            } else {
                crate::credential_call::names_credentials
            };
            for caps in regex.captures_iter(text) {
                let named = caps.name("name").is_some_and(|n| names(n.as_str()));
                if let Some(value) = caps.name("dq").or(caps.name("sq"))
                    && named
                    && !is_non_secret_value(value.as_str(), WEAK_PASSWORD, ValueShape::Quoted)
                {
                    push(
                        value.range(),
                        RedactionKind::Keyword(Keyword::Password),
                        PRIORITY_KEYWORD,
                    );
                }
            }
        }
        Rule::WebhookUrl => {
            for caps in regex.captures_iter(text) {
                if let (Some(host), Some(path)) = (caps.name("host"), caps.name("path"))
                    && let Some(secret) =
                        crate::webhook_url::secret_in_path(host.as_str(), path.as_str())
                {
                    let start = path.start() + secret.start;
                    push(
                        start..path.start() + secret.end,
                        RedactionKind::UrlCredentials,
                        priority,
                    );
                }
            }
        }
        Rule::Userinfo => {
            for caps in regex.captures_iter(text) {
                // Beside a password, a user name is a secret only when it reads as a
                // generated token (`<token>:x-oauth-basic@github.com`, the token as the
                // user), not as a name (`deploy-bot-2019:…@`).
                let beside_password = caps.name("password").is_some();
                if let Some(secret) = caps.name("secret")
                    && secret.as_str().bytes().any(|b| b.is_ascii_digit())
                    && !is_placeholder(secret.as_str())
                    && (!beside_password || !crate::word_shape::is_words(secret.as_str()))
                {
                    push(secret.range(), RedactionKind::UrlCredentials, priority);
                }
            }
        }
        Rule::PrivateKeyBlock => crate::pem::collect(text, priority, out),
        Rule::Labelled | Rule::LabelledFlag => {
            for caps in regex.captures_iter(text) {
                if let Some((range, keyword)) = labelled_value(text, &caps) {
                    push(range, RedactionKind::Keyword(keyword), PRIORITY_KEYWORD);
                }
            }
        }
    }
}

/// `YOUR_TOKEN`, `API_KEY`, `<base64>` after `Bearer`, `Token` or `Basic` (the
/// pattern leaves the scheme out of the value): a placeholder or a secret's name where
/// the credentials go — a header as documentation writes it.
fn is_placeholder_credentials(value: &str) -> bool {
    let value = value.trim();
    is_placeholder(value) || is_placeholder_words(value) || is_name_not_value(value)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod keyword_table_tests;
