//! Hard negatives: text full of hashes, ids, encoded prose, identifiers, paths, URLs,
//! versions and secret-sounding words that holds no secret.

use super::values::{ALNUM, HEX, LOWER_ALNUM, Rng, UPPER_ALNUM, base64};

type Gen = fn(&mut Rng) -> String;

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
    *r.pick(WORDS)
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
        ("labelled-meta", |r| {
            r.pick(&[
                "max_tokens: 1024\ntoken_count: 42",
                "password_file: /run/secrets/db_password",
                "PASSWORD=${DB_PASSWORD}",
                "auth: true",
                "auth_method: oauth2",
                "auth: basic",
                "--- PASS: TestParseConfig (0.00s)",
                "PASS: tests/unit/parser",
                "credentials: /etc/app/creds.json",
                "session_timeout: 30m",
                "cookie_secure: true",
                "key: name",
                "primary_key: id",
                "license: MIT",
                "password_min_length: 12",
                "token_type: Bearer",
                "\"auth_type\": \"oauth\"",
                "pass_rate: 0.97",
                "bypass_cache: true",
                "api_key: <YOUR_API_KEY>",
                "token: ${{ secrets.NPM_TOKEN }}",
                "password: null",
                "auth: none",
                "secret: ''",
                "TOKEN_TTL=3600",
                "pw: ab",
                "auth_required: yes",
                "credentials: include",
                "LICENSE_KEY_PATH=/etc/license.key",
                "session: redis",
                "cookie: sameSite=lax",
                "PASS=1 FAIL=0",
                "<input type=\"password\" name=\"password\" placeholder=\"Password\">",
                "--password-file /run/secrets/pw",
                "auth: jwt",
                "authentication: required",
            ])
            .to_string()
        }),
        ("code", |r| {
            r.pick(&[
                "let password = read_password()?;",
                "fn auth(&self) -> Result<AuthToken, Error> {",
                "    password: String,\n    token: Option<String>,",
                "if (!auth) { return res.status(401).end(); }",
                "def check_password(password: str) -> bool:",
                "const token = await getToken(session.user);",
                "self.session = requests.Session()",
                "cookie = request.cookies.get('session')",
                "password = getpass.getpass()",
                "headers['Authorization'] = f'Bearer {token}'",
                "let pass = config.pass.clone();",
                "auth = HTTPBasicAuth(user, password)",
            ])
            .to_string()
        }),
        ("prose", |r| {
            r.pick(&[
                "The password is stored in the vault.",
                "Please reset your password to continue.",
                "The API key is invalid or expired.",
                "Your session cookie expired; sign in again.",
                "Token limit exceeded for this model.",
                "Enter your password:",
                "A password is required.",
                "The key is in the top drawer.",
                "Tests: 42 passed, 0 failed",
                "Authentication failed for user ada",
                "the password was changed yesterday",
                "Pass the token to the handler",
                "the secret is out",
                "Credentials are rotated every 90 days.",
                "The admin password is managed by Vault",
            ])
            .to_string()
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
    out
}
