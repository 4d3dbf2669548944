//! Hard negatives: text full of hashes, ids, encoded prose, identifiers, paths, URLs,
//! versions and secret-sounding words that holds no secret.

use super::values::{ALNUM, HEX, LOWER_ALNUM, Rng, UPPER_ALNUM, base64};

type Gen = fn(&mut Rng) -> String;

/// Hand-written hard negatives, each used once: `(kind, text)`.
const FIXED: &[(&str, &str)] = &[
    ("labelled-meta", "max_tokens: 1024\ntoken_count: 42"),
    ("labelled-meta", "password_file: /run/secrets/db_password"),
    ("labelled-meta", "PASSWORD=${DB_PASSWORD}"),
    ("labelled-meta", "auth: true"),
    ("labelled-meta", "auth_method: oauth2"),
    ("labelled-meta", "auth: basic"),
    ("labelled-meta", "--- PASS: TestParseConfig (0.00s)"),
    ("labelled-meta", "PASS: tests/unit/parser"),
    ("labelled-meta", "credentials: /etc/app/creds.json"),
    ("labelled-meta", "session_timeout: 30m"),
    ("labelled-meta", "cookie_secure: true"),
    ("labelled-meta", "key: name"),
    ("labelled-meta", "primary_key: id"),
    ("labelled-meta", "license: MIT"),
    ("labelled-meta", "password_min_length: 12"),
    ("labelled-meta", "token_type: Bearer"),
    ("labelled-meta", "\"auth_type\": \"oauth\""),
    ("labelled-meta", "pass_rate: 0.97"),
    ("labelled-meta", "bypass_cache: true"),
    ("labelled-meta", "api_key: <YOUR_API_KEY>"),
    ("labelled-meta", "token: ${{ secrets.NPM_TOKEN }}"),
    ("labelled-meta", "password: null"),
    ("labelled-meta", "auth: none"),
    ("labelled-meta", "secret: ''"),
    ("labelled-meta", "TOKEN_TTL=3600"),
    ("labelled-meta", "pw: ab"),
    ("labelled-meta", "auth_required: yes"),
    ("labelled-meta", "credentials: include"),
    ("labelled-meta", "LICENSE_KEY_PATH=/etc/license.key"),
    ("labelled-meta", "session: redis"),
    ("labelled-meta", "PASS=1 FAIL=0"),
    (
        "labelled-meta",
        "<input type=\"password\" name=\"password\" placeholder=\"Password\">",
    ),
    ("labelled-meta", "--password-file /run/secrets/pw"),
    ("labelled-meta", "auth: jwt"),
    ("labelled-meta", "authentication: required"),
    ("code", "let password = read_password()?;"),
    ("code", "fn auth(&self) -> Result<AuthToken, Error> {"),
    ("code", "    password: String,\n    token: Option<String>,"),
    ("code", "if (!auth) { return res.status(401).end(); }"),
    ("code", "def check_password(password: str) -> bool:"),
    ("code", "const token = await getToken(session.user);"),
    ("code", "self.session = requests.Session()"),
    ("code", "cookie = request.cookies.get('session')"),
    ("code", "password = getpass.getpass()"),
    ("code", "headers['Authorization'] = f'Bearer {token}'"),
    ("code", "let pass = config.pass.clone();"),
    ("code", "auth = HTTPBasicAuth(user, password)"),
    ("prose", "The password is stored in the vault."),
    ("prose", "Please reset your password to continue."),
    ("prose", "The API key is invalid or expired."),
    ("prose", "Your session cookie expired; sign in again."),
    ("prose", "Token limit exceeded for this model."),
    ("prose", "Enter your password:"),
    ("prose", "A password is required."),
    ("prose", "The key is in the top drawer."),
    ("prose", "Tests: 42 passed, 0 failed"),
    ("prose", "Authentication failed for user ada"),
    ("prose", "the password was changed yesterday"),
    ("prose", "Pass the token to the handler"),
    ("prose", "the secret is out"),
    ("prose", "Credentials are rotated every 90 days."),
    ("prose", "The admin password is managed by Vault"),
    ("rule-edges", "auth: fix login redirect loop"),
    ("rule-edges", "token: refresh the cache before the deploy"),
    (
        "rule-edges",
        "        - name: DB_PASSWORD\n          valueFrom:\n            secretKeyRef:\n              name: db-secret\n              key: password\n        - name: LOG_LEVEL\n          value: info\n",
    ),
    ("rule-edges", "<password/>"),
    ("rule-edges", "<token>{{ token }}</token>"),
    ("rule-edges", "<password></password>"),
    (
        "rule-edges",
        "<input type=\"password\" name=\"password\" value=\"\">",
    ),
    (
        "rule-edges",
        "<label for=\"password\">Password</label><input id=\"password\" name=\"password\">",
    ),
    (
        "rule-edges",
        "{\"name\": \"db_password\", \"type\": \"string\", \"required\": true}",
    ),
    ("rule-edges", "{\"name\": \"api_key\", \"value\": null}"),
    (
        "rule-edges",
        "password:\n  description: The user password\n  type: string\n  minLength: 12\n",
    ),
    (
        "rule-edges",
        "auth:\n  type: oauth2\n  flows:\n    implicit: {}\n",
    ),
    ("rule-edges", "token:\n  - read\n  - write\n"),
    ("rule-edges", "secret: |\n  {{ .Values.secret }}\n"),
    ("rule-edges", "mysql -P 3306 -h localhost -u root -p"),
    ("rule-edges", "mysql -u root -p mydb"),
    (
        "rule-edges",
        "docker login -u ada --password-stdin registry.example.com",
    ),
    ("rule-edges", "redis-cli -a $REDIS_PASSWORD ping"),
    ("rule-edges", "sshpass -e ssh ada@host"),
    (
        "rule-edges",
        "https://example.com/search?key=name&order=asc",
    ),
    (
        "rule-edges",
        "https://api.example.com/v1/sort?key=created_at&sig=none",
    ),
    ("rule-edges", "Cookie: theme=dark; lang=en"),
    ("rule-edges", "Authorization: Bearer ${TOKEN}"),
    ("rule-edges", "The password is at least 12 characters long."),
    ("rule-edges", "the token was refreshed at startup"),
    ("rule-edges", "The key is to test often."),
    ("rule-edges", "the password is `None`"),
    ("rule-edges", "Password is Required"),
    ("rule-edges", "the API key is `<YOUR_API_KEY>`"),
    ("rule-edges", "Set the password to something memorable."),
    ("rule-edges", "VERSION=1.2.3\nBUILD=release\n"),
    (
        "rule-edges",
        "/home/ada/projects/scrubber\n/home/ada/projects/runtime\n",
    ),
    ("rule-edges", "SESSION=redis\nCOOKIE_DOMAIN=.example.com\n"),
    (
        "rule-edges",
        "https://sentry.io/organizations/acme/issues/?project=4504",
    ),
    ("rule-edges", "git clone ssh://git@github.com/acme/app.git"),
    ("rule-edges", "Login: ada\nPassword: (ask Bob)\n"),
    ("rule-edges", "PASS: test_parser\nFAIL: test_lexer\n"),
    ("rule-edges", "--- PASS: TestScrubYAMLBlock (0.00s)"),
    ("rule-edges", "credentials: &default_creds\n  <<: *base\n"),
    ("rule-edges", "pass: [1, 2, 3]"),
    ("rule-edges", "use crate::token_counter::CountMode;"),
    ("rule-edges", "  - OpenAI:     export OPENAI_API_KEY=sk-..."),
    (
        "rule-edges",
        "sent as `Authorization: Bearer …`; without a key",
    ),
    (
        "rule-edges",
        "a plain word password (`SMTP_PASS=monkey`) stays",
    ),
    ("rule-edges", "if token == expected { return; }"),
    (
        "rule-edges",
        "`Cookie:` redacts the value of each `name=value` pair that looks like",
    ),
    (
        "rule-edges",
        "or in prose (`the secret is shadow`) looks like",
    ),
    (
        "rule-edges",
        "    pub authorization: Option<String>,\n    authorization: header_text(\"authorization\"),",
    ),
    (
        "rule-edges",
        "/// Refuses a request without `Authorization: Bearer <token>` with a `401` JSON error.\npub(crate) async fn require_bearer(\n    State(token): State<Arc<str>>,",
    ),
];

const WORDS: &[&str] = &[
    "config", "server", "handler", "request", "response", "parse", "build", "client", "user",
    "account", "session", "cache", "manager", "factory", "provider", "service", "token", "render",
    "update", "delete", "create", "stream", "buffer", "reader", "writer", "event", "queue",
    "worker", "thread", "policy", "schema", "record", "message", "channel", "router",
];
const PROSE: &[&str] = &[
    "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "and", "then", "a", "report",
    "was", "sent", "to", "all", "team", "members", "before", "deadline", "with", "notes", "about",
    "release", "build", "status", "of", "our", "project",
];

fn word(r: &mut Rng) -> &'static str {
    r.pick::<&str>(WORDS)
}

fn camel(r: &mut Rng, n: usize) -> String {
    (0..n)
        .map(|_| {
            let w = word(r);
            format!("{}{}", w[..1].to_uppercase(), &w[1..])
        })
        .collect()
}

fn snake(r: &mut Rng, n: usize) -> String {
    (0..n).map(|_| word(r)).collect::<Vec<_>>().join("_")
}

fn sentence(r: &mut Rng, n: usize) -> String {
    (0..n).map(|_| *r.pick(PROSE)).collect::<Vec<_>>().join(" ")
}

fn uuid(r: &mut Rng) -> String {
    let h = r.string(HEX, 32);
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..]
    )
}

fn version(r: &mut Rng) -> String {
    let base = format!("{}.{}.{}", r.below(20), r.below(100), r.below(300));
    match r.below(4) {
        0 => format!("v{base}"),
        1 => format!("{base}-rc.{}+build.2024{:04}", r.below(9), r.below(1231)),
        2 => format!("{base}-beta.{}", r.below(20)),
        _ => base,
    }
}

fn generators() -> Vec<(&'static str, Gen)> {
    vec![
        ("git-commit", |r| {
            format!(
                "commit {}\nAuthor: Ada <ada@example.com>\nMerge: {} {}",
                r.string(HEX, 40),
                r.string(HEX, 7),
                r.string(HEX, 7)
            )
        }),
        ("git-oneline", |r| {
            format!("{} {}: {}", r.string(HEX, 7), word(r), sentence(r, 6))
        }),
        ("git-blob-url", |r| {
            format!(
                "https://github.com/acme/{}/blob/{}/src/{}.rs#L{}",
                word(r),
                r.string(HEX, 40),
                snake(r, 2),
                r.below(900)
            )
        }),
        ("sha256", |r| {
            format!("{}  {}-{}.tar.gz", r.string(HEX, 64), word(r), version(r))
        }),
        ("docker-digest", |r| {
            format!(
                "docker pull ghcr.io/acme/{}@sha256:{}",
                word(r),
                r.string(HEX, 64)
            )
        }),
        ("uuid-json", |r| {
            format!(
                "{{\"id\": \"{}\", \"request_id\": \"{}\", \"status\": \"ok\"}}",
                uuid(r),
                uuid(r).to_uppercase()
            )
        }),
        ("trace-ids", |r| {
            format!(
                "trace_id={} span_id={} level=info msg=\"{}\"",
                r.string(HEX, 32),
                r.string(HEX, 16),
                sentence(r, 4)
            )
        }),
        ("base64-prose", |r| {
            let n = 6 + r.below(10);
            format!("payload: {}", base64(sentence(r, n).as_bytes()))
        }),
        ("base64-json", |r| {
            format!(
                "data {}",
                base64(format!("{{\"user\":\"{}\",\"role\":\"{}\"}}", word(r), word(r)).as_bytes())
            )
        }),
        ("snake-ident", |r| {
            let n = 4 + r.below(4);
            format!("fn {}_{}() -> Result<()> {{", snake(r, n), r.below(99))
        }),
        ("camel-ident", |r| {
            let n = 4 + r.below(4);
            format!(
                "class {}{} extends {}",
                camel(r, n),
                r.below(2030),
                camel(r, 3)
            )
        }),
        ("screaming", |r| {
            let n = 4 + r.below(3);
            format!(
                "const {}_V{}: usize = {};",
                snake(r, n).to_uppercase(),
                r.below(9),
                r.below(4096)
            )
        }),
        ("java-fqcn", |r| {
            format!(
                "at org.acme.{}.{}.{}({}.java:{})",
                word(r),
                word(r),
                camel(r, 3),
                camel(r, 2),
                r.below(800)
            )
        }),
        ("path", |r| {
            format!(
                "/home/ada/projects/{}-{}/src/{}/{}_{}.rs:{}:{}",
                word(r),
                word(r),
                word(r),
                snake(r, 2),
                r.below(9),
                r.below(500),
                r.below(80)
            )
        }),
        ("windows-path", |r| {
            format!(
                "C:\\Users\\ada\\AppData\\Local\\{}\\{}{}.dll",
                camel(r, 2),
                camel(r, 3),
                r.below(99)
            )
        }),
        ("url", |r| {
            format!(
                "https://www.{}.com/{}/{}?q={}&page={}&utm_source=newsletter&ref={}",
                word(r),
                word(r),
                snake(r, 2),
                word(r),
                r.below(50),
                word(r)
            )
        }),
        ("url-ids", |r| {
            format!(
                "GET https://api.example.com/v1/users/{}/orders/{}?expand=items 200",
                uuid(r),
                r.string(LOWER_ALNUM, 12)
            )
        }),
        ("version", |r| {
            format!(
                "{} {} ({} 2024-11-26)",
                word(r),
                version(r),
                r.string(HEX, 9)
            )
        }),
        ("npm-integrity", |r| {
            format!("\"integrity\": \"sha512-{}\"", base64(&r.bytes(64)))
        }),
        ("cargo-checksum", |r| {
            format!("checksum = \"{}\"", r.string(HEX, 64))
        }),
        ("go-sum", |r| {
            format!(
                "github.com/acme/{} {} h1:{}",
                word(r),
                version(r),
                base64(&r.bytes(32))
            )
        }),
        ("pip-hash", |r| {
            format!(
                "{}=={} --hash=sha256:{}",
                word(r),
                version(r),
                r.string(HEX, 64)
            )
        }),
        ("k8s-pod", |r| {
            format!(
                "pod/{}-{}-{} Running 0 {}m",
                word(r),
                r.string(LOWER_ALNUM, 10),
                r.string(LOWER_ALNUM, 5),
                r.below(90)
            )
        }),
        ("aws-arn", |r| {
            format!(
                "arn:aws:iam::{}:role/{}-{}",
                r.string(b"0123456789", 12),
                camel(r, 2),
                word(r)
            )
        }),
        ("ulid", |r| {
            format!("order {} created", r.string(UPPER_ALNUM, 26))
        }),
        ("test-output", |r| {
            format!("test {}::tests::{} ... ok", word(r), snake(r, 4))
        }),
        ("timestamp-ip", |r| {
            format!(
                "{}-11-23T{:02}:{:02}:{:02}.{:03}Z 10.{}.{}.{} fe80::{}:{}",
                2020 + r.below(7),
                r.below(24),
                r.below(60),
                r.below(60),
                r.below(1000),
                r.below(255),
                r.below(255),
                r.below(255),
                r.string(HEX, 4),
                r.string(HEX, 4)
            )
        }),
        ("mixed-case-name", |r| {
            format!("{}{}Test{}", camel(r, 5), r.below(9), r.string(ALNUM, 0))
        }),
    ]
}

/// Every negative generator, `per_kind` cases each: `(kind, text)`.
pub fn cases(per_kind: usize) -> Vec<(&'static str, String)> {
    let mut rng = Rng::new(0x7e57_0000);
    let mut out = Vec::new();
    for (kind, generate) in generators() {
        for _ in 0..per_kind {
            out.push((kind, generate(&mut rng)));
        }
    }
    out.extend(FIXED.iter().map(|(kind, text)| (*kind, (*text).to_owned())));
    out
}
