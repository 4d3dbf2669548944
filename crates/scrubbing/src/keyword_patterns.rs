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
use crate::placeholder::{is_name_not_value, is_placeholder, is_placeholder_words};
use crate::redaction::{KeyProvider, Keyword, RedactionKind};
use crate::value_filter::{ValueShape, is_non_secret_value};
use crate::value_syntax::{BARE_FLAG_VALUE, VALUE};

/// How a `user:password` pair's password is judged: it must look like data.
const WEAK_PASSWORD: KeyInfo = KeyInfo {
    keyword: Keyword::Password,
    is_pwd: false,
    weak: true,
    encoded: false,
};

/// How a pattern's matches become candidates.
#[derive(Debug, Clone, Copy)]
enum Rule {
    /// The whole match is the secret.
    Whole(FixedKind),
    /// `group secret` is the secret unless it is a placeholder.
    Group(FixedKind),
    /// Like [`Rule::Whole`] for a prefix that also starts identifiers (`hf_`): the
    /// text after the prefix must not be words, nor be followed by `_`.
    Words(FixedKind),
    /// `-u user:password`: group `secret`, a password that is not a word.
    UserPassword,
    /// A private-key block, found by `pem` from the trigger.
    PrivateKeyBlock,
    /// An OpenAI-style `sk-` key: whole match, must contain a digit.
    OpenAi,
    /// `Authorization: <scheme> <credentials>`: group `secret`, not a scheme word.
    Authorization,
    /// A bare `Bearer <token>`: group `secret`, must contain a digit.
    BareBearer,
    /// `key <sep> value`: the key (group `key`) must label a secret and the value
    /// (groups `dq`, `sq`, `eq`, `uv`) must not be obviously harmless.
    Labelled,
    /// `--key value`: like [`Rule::Labelled`], for command-line flags.
    LabelledFlag,
    /// A command's password argument (`mysql -pX`, `sshpass -p X`): groups `sq`, `dq`
    /// or `uv`, not a placeholder.
    Cli,
    /// `auth=('user', 'password')`, `NetworkCredential("user", "password")`: group
    /// `dq` or `sq` when the name is a credential word's (`credential_call`) and the
    /// password looks like data (as `-u user:password`'s).
    CredentialPair,
    /// `-u <user> … -p <password>` on one command line, whatever the command: like
    /// [`Rule::Cli`], and not a port or a number (`docker run -u 1000 -p 8080:80`).
    UserThenPassword,
    /// `scheme://<token>@host` without a password: group `secret`, with a digit.
    Userinfo,
    /// A webhook's URL: groups `host` and `path`; the secret is what
    /// `webhook_url::secret_in_path` finds in the path.
    WebhookUrl,
}

/// The kinds a built-in rule can report (`RedactionKind` minus the heap-carrying
/// variants, so rules stay `Copy`).
#[derive(Debug, Clone, Copy)]
enum FixedKind {
    Api(KeyProvider),
    Jwt,
    UrlCredentials,
    PasswordHash,
}

impl FixedKind {
    fn kind(self) -> RedactionKind {
        match self {
            Self::Api(provider) => RedactionKind::ApiKey(provider),
            Self::Jwt => RedactionKind::Jwt,
            Self::UrlCredentials => RedactionKind::UrlCredentials,
            Self::PasswordHash => RedactionKind::PasswordHash,
        }
    }
}

/// A key name; whether it labels a secret is decided word by word (`key_names`)
/// before this pattern runs.
const KEY: &str = r"(?P<key>[A-Za-z0-9_.-]+)";
/// The labelled-value patterns' trigger, `keyword_scan::LABEL_WORDS` in lower,
/// Capitalised and UPPER case, as a regex: the pass that finds them is
/// `keyword_scan`'s (a test checks the two agree); this string is the pattern's
/// documented trigger.
const KEYWORD_TRIGGER: &str = "token|Token|TOKEN|secret|Secret|SECRET|pass|Pass|PASS|pw|Pw|PW|key|Key|KEY|auth|Auth|AUTH|cred|Cred|CRED|cookie|Cookie|COOKIE|sess|Sess|SESS|sig|Sig|SIG|salt|Salt|SALT|dsn|Dsn|DSN|hook|Hook|HOOK|fresh|Fresh|FRESH";
/// The literal every modular-crypt hash starts with: its scheme between `$`s.
const MCF_TRIGGER: &str = "$1$|$2$|$2a$|$2b$|$2x$|$2y$|$5$|$6$|$7$|$8$|$9$|$md5$|$apr1$|$sha1$|$y$|$gy$|$argon2|$scrypt$|$pbkdf2";
/// A command-line argument value: single-quoted, double-quoted or bare.
const ARG: &str = r#"(?:'(?P<sq>[^'\r\n]*)'|"(?P<dq>[^"\r\n]*)"|(?P<uv>[^\s'"]+))"#;

struct PatternDef {
    /// Literal alternation that every match of `regex` contains (the set pre-filter).
    trigger: &'static str,
    regex: String,
    rule: Rule,
}

fn def(trigger: &'static str, regex: &str, rule: Rule) -> PatternDef {
    PatternDef {
        trigger,
        regex: regex.to_owned(),
        rule,
    }
}

/// The built-in patterns; a pattern's index is its priority (lower wins ties).
fn pattern_defs() -> Vec<PatternDef> {
    use FixedKind as K;
    use KeyProvider as P;
    vec![
        // Private-key blocks, bounded by hand (see `pem`).
        def("-----BEGIN", r"-----BEGIN ", Rule::PrivateKeyBlock),
        def(
            "AKIA|ASIA|ABIA|ACCA",
            r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?-u:\b)",
            Rule::Whole(K::Api(P::AwsAccessKeyId)),
        ),
        def(
            "secret|Secret|SECRET",
            r#"(?i:aws_?secret_?(?:access_?)?key)(?:\\?["'])?[ \t]*(?::=|=>|[:=])[ \t]*(?:\\?["'])?(?P<secret>[A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)"#,
            Rule::Group(K::Api(P::AwsSecretAccessKey)),
        ),
        def(
            "ghp_|gho_|ghu_|ghs_|ghr_|github_pat_",
            r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{30}[A-Za-z0-9]*|github_pat_[A-Za-z0-9_]{22}[A-Za-z0-9_]*)",
            Rule::Whole(K::Api(P::Github)),
        ),
        def(
            "xoxa-|xoxb-|xoxp-|xoxo-|xoxs-|xoxr-",
            r"(?-u:\b)xox[abposr]-(?:[0-9]{8,}-|[0-9]+-[0-9]{8,}-|[0-9A-Za-z]+-[0-9]+-)[A-Za-z0-9-]{8}[A-Za-z0-9-]*",
            Rule::Whole(K::Api(P::Slack)),
        ),
        def(
            "sk-ant-",
            r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20}[A-Za-z0-9_-]*",
            Rule::Whole(K::Api(P::Anthropic)),
        ),
        def(
            "sk-",
            r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20}[A-Za-z0-9_-]*",
            Rule::OpenAi,
        ),
        def(
            "AIza",
            r"(?-u:\b)AIza[0-9A-Za-z_-]{33}[0-9A-Za-z_-]*",
            Rule::Whole(K::Api(P::Google)),
        ),
        def(
            "sk_live_|rk_live_|sk_test_|rk_test_",
            r"(?-u:\b)(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16}[0-9A-Za-z]*",
            Rule::Whole(K::Api(P::Stripe)),
        ),
        def(
            "eyJ",
            r"(?-u:\b)eyJ[A-Za-z0-9_-]{5}[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]{5}[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*",
            Rule::Whole(K::Jwt),
        ),
        def(
            "glpat-",
            r"(?-u:\b)glpat-[A-Za-z0-9_-]{20}[A-Za-z0-9_-]*",
            Rule::Whole(K::Api(P::GitLab)),
        ),
        def(
            "npm_",
            r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)",
            Rule::Whole(K::Api(P::Npm)),
        ),
        def(
            "hf_|api_org_",
            r"(?-u:\b)(?:hf|api_org)_[A-Za-z0-9]{30}[A-Za-z0-9]*",
            Rule::Words(K::Api(P::HuggingFace)),
        ),
        def(
            "SG.",
            r"(?-u:\b)SG\.[A-Za-z0-9_-]{16}[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{16}[A-Za-z0-9_-]*",
            Rule::Whole(K::Api(P::SendGrid)),
        ),
        def(
            "://",
            r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@?#"'<>\[\]]*:(?P<secret>[^\s/?#"'<>]+)@"#,
            Rule::Group(K::UrlCredentials),
        ),
        def(
            "://",
            r"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]*://(?P<secret>[A-Za-z0-9_.~-]{16}[A-Za-z0-9_.~-]*)@",
            Rule::Userinfo,
        ),
        def(
            "hook|Hook|HOOK",
            r#"(?i:https?)://(?P<host>[A-Za-z0-9.-]+)(?::[0-9]+)?(?P<path>/[^\s"'`<>?#\\]*)"#,
            Rule::WebhookUrl,
        ),
        def(
            "mysql|mariadb",
            &format!(r"(?:mysql|mariadb)[A-Za-z_-]*[^\n]*?[ \t]-p{ARG}"),
            Rule::Cli,
        ),
        def(
            "sshpass",
            &format!(r"sshpass(?:[ \t]+-[a-oq-zA-Z]\S*)*[ \t]+-p[ \t]*{ARG}"),
            Rule::Cli,
        ),
        def(
            "redis-cli",
            &format!(r"redis-cli[^\n]*?[ \t]-a[ \t]+{ARG}"),
            Rule::Cli,
        ),
        def(
            "login",
            &format!(r"login[^\n]*?[ \t]-p[ \t]+{ARG}"),
            Rule::Cli,
        ),
        def(
            "-u",
            &format!(r"(?m:(?:^|[ \t])-u[ \t]+(?P<user>[^\s-]\S*)[^\n]*?[ \t]-p[ \t]+{ARG})"),
            Rule::UserThenPassword,
        ),
        def(
            crate::credential_call::TRIGGER,
            crate::credential_call::PATTERN,
            Rule::CredentialPair,
        ),
        // The modular crypt format's schemes (passlib's list: md5-crypt, bcrypt,
        // sha256/512-crypt, Cisco's types 7–9, yescrypt, argon2, scrypt, PBKDF2), each
        // `$scheme$`, then its salt, parameters and hash.
        def(
            MCF_TRIGGER,
            r"(?:^|[^A-Za-z0-9$\\])(?P<secret>\$(?:1|2[abxy]?|5|6|7|8|9|md5|apr1|sha1|y|gy|argon2(?:id|i|d)|scrypt|pbkdf2(?:-sha(?:1|256|512))?)\$[A-Za-z0-9./+=,$-]{20,})",
            Rule::Group(K::PasswordHash),
        ),
        def(
            "authorization|Authorization|AUTHORIZATION",
            r#"(?i:(?-u:\b)(?:proxy-)?authorization)(?:\\?["'])?[ \t]*[:=][ \t]*(?:\\?["'])?(?:(?i:bearer|basic|token|bot)[ \t]+)?(?P<secret>[^\s"'`<>,;\\][^\r\n"'`<>\\]*)"#,
            Rule::Authorization,
        ),
        def(
            "bearer|Bearer|BEARER",
            r"(?-u:\b)(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{16}[A-Za-z0-9._~+/-]*=*)",
            Rule::BareBearer,
        ),
        def(
            "-u|--user",
            r#"(?m:(?:^|[ \t])(?:-u|--user)[ \t]+["']?[^\s:"'\[\]]+:(?P<secret>[^\s"']+))"#,
            Rule::UserPassword,
        ),
        def(
            KEYWORD_TRIGGER,
            &format!(r#"{KEY}(?:\\?["'])?[ \t]*(?::=|=>|[:=])[ \t]*{VALUE}"#),
            Rule::Labelled,
        ),
        // Triggered by `--` alone: a second copy of the keyword literals would double
        // the pre-filter's literal set and disable its fast literal search.
        def(
            "--",
            &format!(r"--{KEY}[ \t]+{BARE_FLAG_VALUE}"),
            Rule::LabelledFlag,
        ),
    ]
}

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

/// The pre-filter compiled, every pattern ready to compile.
fn build() -> Result<Builtins, String> {
    let defs = pattern_defs();
    let rules = crate::rule_data::rules().map_err(|_| "the rule data is malformed".to_owned())?;
    let triggers: Vec<(usize, &'static str)> = defs
        .iter()
        .enumerate()
        // The labelled values' trigger words are `keyword_scan::LABEL_WORDS`.
        .filter(|(_, d)| !matches!(d.rule, Rule::Labelled))
        .flat_map(|(index, d)| trigger_literals(d.trigger).map(move |t| (index, t)))
        .collect();
    let scanner = KeywordScanner::build(
        rules.rules.iter().map(|r| r.keywords.as_slice()),
        triggers.into_iter(),
    )
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
                | Rule::CredentialPair => Some(LazyRegex::new(
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
        Rule::Group(kind) => {
            for caps in regex.captures_iter(text) {
                if let Some(secret) = caps.name("secret")
                    && !is_placeholder(secret.as_str())
                {
                    push(secret.range(), kind.kind(), priority);
                }
            }
        }
        Rule::UserPassword => {
            // `curl -u user:pass`: a password that is a word (`test:test`,
            // `username:token`, `user:pass`) is an example, not a credential.
            for caps in regex.captures_iter(text) {
                if let Some(secret) = caps.name("secret")
                    && !is_non_secret_value(secret.as_str(), WEAK_PASSWORD, ValueShape::Quoted)
                {
                    push(
                        secret.range(),
                        RedactionKind::Keyword(Keyword::Password),
                        priority,
                    );
                }
            }
        }
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
        Rule::CredentialPair => {
            for caps in regex.captures_iter(text) {
                let named = caps
                    .name("name")
                    .is_some_and(|n| crate::credential_call::names_credentials(n.as_str()));
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
                if let Some(secret) = caps.name("secret")
                    && secret.as_str().bytes().any(|b| b.is_ascii_digit())
                    && !is_placeholder(secret.as_str())
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
