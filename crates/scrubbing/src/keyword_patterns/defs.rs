//! The built-in patterns' table: each pattern's literal trigger, its expression and
//! the rule that turns its matches into candidates. A pattern's index is its priority.

use crate::redaction::{KeyProvider, RedactionKind};
use crate::value_syntax::{BARE_FLAG_VALUE, VALUE};

/// How a pattern's matches become candidates.
#[derive(Debug, Clone, Copy)]
pub(super) enum Rule {
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
    /// `mysqli_connect('db', 'admin', 'password')`: group `dq` or `sq` when the name
    /// opens a connection (`credential_call::names_connection`), the password judged as
    /// [`Rule::CredentialPair`]'s.
    ConnectCall,
    /// `-u <user> … -p <password>` on one command line, whatever the command: like
    /// [`Rule::Cli`], and not a port or a number (`docker run -u 1000 -p 8080:80`).
    UserThenPassword,
    /// `scheme://<token>@host`: group `secret`, with a digit; when a password follows
    /// (group `password`, `<token>:x-oauth-basic@`), only a user name that reads as a
    /// generated token, not a name.
    Userinfo,
    /// A network device's configuration line: group `secret`, judged by its encoding
    /// type (group `kind`: `device_config::is_typed_secret`) or, without one, as an
    /// SNMP community (`device_config::is_community`).
    DeviceConfig,
    /// A wallet's seed phrase under its label: group `secret` when
    /// `seed_phrase::is_seed_phrase` holds.
    SeedPhrase,
    /// A webhook's URL: groups `host` and `path`; the secret is what
    /// `webhook_url::secret_in_path` finds in the path.
    WebhookUrl,
}

/// The kinds a built-in rule can report (`RedactionKind` minus the heap-carrying
/// variants, so rules stay `Copy`).
#[derive(Debug, Clone, Copy)]
pub(super) enum FixedKind {
    Api(KeyProvider),
    Jwt,
    UrlCredentials,
    PasswordHash,
}

impl FixedKind {
    pub(super) fn kind(self) -> RedactionKind {
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
pub(super) const KEYWORD_TRIGGER: &str = "token|Token|TOKEN|secret|Secret|SECRET|pass|Pass|PASS|pw|Pw|PW|key|Key|KEY|auth|Auth|AUTH|cred|Cred|CRED|cookie|Cookie|COOKIE|sess|Sess|SESS|sig|Sig|SIG|salt|Salt|SALT|dsn|Dsn|DSN|hook|Hook|HOOK|fresh|Fresh|FRESH";
/// The literal every modular-crypt hash starts with: its scheme between `$`s.
const MCF_TRIGGER: &str = "$1$|$2$|$2a$|$2b$|$2x$|$2y$|$5$|$6$|$7$|$8$|$9$|$md5$|$apr1$|$sha1$|$y$|$gy$|$argon2|$scrypt$|$pbkdf2";
/// A Windows command's user flag, as every match of its pattern starts.
const WINDOWS_USER_FLAGS: &str =
    "/u:|/u |/U:|/U |/user:|/user |/USER:|/USER |/User:|/User |/ru:|/ru |/RU:|/RU ";
/// A command-line argument value: single-quoted, double-quoted or bare.
const ARG: &str = r#"(?:'(?P<sq>[^'\r\n]*)'|"(?P<dq>[^"\r\n]*)"|(?P<uv>[^\s'"]+))"#;

pub(super) struct PatternDef {
    /// Literal alternation that every match of `regex` contains (the set pre-filter).
    pub(super) trigger: &'static str,
    pub(super) regex: String,
    pub(super) rule: Rule,
}

fn def(trigger: &'static str, regex: &str, rule: Rule) -> PatternDef {
    PatternDef {
        trigger,
        regex: regex.to_owned(),
        rule,
    }
}

/// The built-in patterns; a pattern's index is its priority (lower wins ties).
pub(super) fn pattern_defs() -> Vec<PatternDef> {
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
            r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]*://(?P<secret>[A-Za-z0-9_.~-]{16}[A-Za-z0-9_.~-]*)(?P<password>:[^\s/?#"'<>@]*)?@"#,
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
        // The same on a Windows command line: `schtasks … /ru admin /rp …`, `wmic
        // /user:admin /password:…`, `cmdkey /user:x /pass:…`, `schtasks /u x /p …`.
        def(
            WINDOWS_USER_FLAGS,
            &format!(
                r"(?m:(?:^|[ \t])/(?:u|U|user|USER|User|ru|RU)[: ](?P<user>[^\s/-]\S*)[^\n]*?[ \t]/(?:p|P|rp|RP|pass|PASS|Pass|password|PASSWORD|Password)[: ]{ARG})"
            ),
            Rule::UserThenPassword,
        ),
        // SQL's password clause: `CREATE USER 'a'@'%' IDENTIFIED BY '…'`, Oracle's bare
        // `ALTER USER scott IDENTIFIED BY …;`, `IDENTIFIED WITH mysql_native_password BY
        // '…'`: in a statement that makes or changes a user, a role or a login, so the
        // English `identified by` is not one (nor prose that grants `… identified by`).
        def(
            "IDENTIFIED|identified|Identified",
            r#"(?i:(?-u:\b)(?:create|alter)[ \t]+(?:user|role|login)[ \t])[^\n;]*?(?i:identified)(?:[ \t]+(?i:with)[ \t]+[A-Za-z_]+)?[ \t]+(?i:by)[ \t]+(?:(?i:password)[ \t]+)?(?:'(?P<sq>[^'\r\n]*)'|"(?P<dq>[^"\r\n]*)"|(?P<uv>[^\s'";]+))"#,
            Rule::Cli,
        ),
        def(
            crate::credential_call::TRIGGER,
            crate::credential_call::PATTERN,
            Rule::CredentialPair,
        ),
        def(
            crate::credential_call::CONNECT_TRIGGER,
            crate::credential_call::CONNECT_PATTERN,
            Rule::ConnectCall,
        ),
        // The modular crypt format's schemes (passlib's list: md5-crypt, bcrypt,
        // sha256/512-crypt, Cisco's types 7–9, yescrypt, argon2, scrypt, PBKDF2), each
        // `$scheme$`, then its salt, parameters and hash.
        def(
            MCF_TRIGGER,
            r"(?:^|[^A-Za-z0-9$\\])(?P<secret>\$(?:1|2[abxy]?|5|6|7|8|9|md5|apr1|sha1|y|gy|argon2(?:id|i|d)|scrypt|pbkdf2(?:-sha(?:1|256|512))?)\$[A-Za-z0-9./+=,$-]{20,})",
            Rule::Group(K::PasswordHash),
        ),
        // hashcat's Kerberos hashes (AS-REP and TGS roasting, pre-authentication), as
        // attack tools print them: `$krb5asrep$23$user@realm:<checksum>$<cipher>`,
        // each enough to guess the account's password offline.
        def(
            "$krb5",
            r#"(?:^|[^A-Za-z0-9$\\])(?P<secret>\$krb5(?:asrep|tgs|tgt|pa)\$(?:17|18|23)\$[^\s"'`<>]{32,})"#,
            Rule::Group(K::PasswordHash),
        ),
        // A network device's typed secrets and SNMP communities (Cisco IOS syntax).
        def(
            crate::device_config::TRIGGER,
            crate::device_config::TYPED_PATTERN,
            Rule::DeviceConfig,
        ),
        def(
            "snmp-server community ",
            crate::device_config::COMMUNITY_PATTERN,
            Rule::DeviceConfig,
        ),
        // A wallet's seed phrase under its label (`"mnemonic": "…"`, `seed_phrase =
        // …`): the value is the whole phrase, BIP-39's 12, 15, 18, 21 or 24 words of
        // its list and nothing after them on the line but punctuation.
        def(
            crate::seed_phrase::TRIGGER,
            &crate::seed_phrase::pattern(),
            Rule::SeedPhrase,
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
