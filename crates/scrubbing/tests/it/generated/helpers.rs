//! Helpers shared by the format generators.

use super::values::{ALNUM, LOWER_ALNUM, Rng, UPPER_ALNUM, base64};

/// Secret names as environment variables.
pub const ENV_NAMES: &[&str] = &[
    "DB_PASSWORD",
    "SMTP_PASS",
    "ADMIN_PASS",
    "PASS",
    "PW",
    "AUTH",
    "CREDENTIALS",
    "SESSION_COOKIE",
    "ACCOUNT_KEY",
    "LICENSE_KEY",
    "MYSQL_ROOT_PASSWORD",
    "REDIS_PASS",
    "API_TOKEN",
    "JWT_SECRET",
    "CLIENT_SECRET",
    "ENCRYPTION_KEY",
    "SECRET_KEY_BASE",
    "APP_KEY",
    "NPM_TOKEN",
    "PGPASSWORD",
    "MYSQL_PWD",
    "AWS_SESSION_TOKEN",
    "STORAGE_ACCOUNT_KEY",
    "WEBHOOK_SECRET",
    "SESSION_SECRET",
    "HMAC_KEY",
    "BASIC_AUTH",
    "LDAP_BIND_PW",
    "ROOT_PW",
    "DB_PASS",
    "RABBITMQ_DEFAULT_PASS",
    "KEYSTORE_PASS",
    "SIGNING_KEY",
    "MASTER_KEY",
    "ADMIN_CREDENTIALS",
    "DB_CREDS",
    "AUTH_KEY",
    "SECRET",
    "TOKEN",
    "API_KEY",
    "SERVICE_KEY",
    "SHARED_KEY",
    "CONSUMER_SECRET",
    "SECRET_ACCESS_KEY",
    "PASSPHRASE",
    "SSH_PASSPHRASE",
    "PASSCODE",
    "ADMIN_PW",
    "SMTP_AUTH",
    "MAIL_PASS",
    "DJANGO_SECRET_KEY",
    "SECRET_TOKEN",
];

/// `DB_PASSWORD` → `db_password` / `dbPassword` / `db-password`.
pub fn key_style(rng: &mut Rng, env: &str) -> String {
    let lower = env.to_lowercase();
    match rng.below(3) {
        0 => lower,
        1 => {
            let mut out = String::new();
            for (i, part) in lower.split('_').enumerate() {
                if i == 0 {
                    out.push_str(part);
                } else {
                    out.push_str(&part[..1].to_uppercase());
                    out.push_str(&part[1..]);
                }
            }
            out
        }
        _ => lower.replace('_', "-"),
    }
}

pub fn env_name(rng: &mut Rng) -> &'static str {
    rng.pick::<&str>(ENV_NAMES)
}

pub fn host(rng: &mut Rng) -> String {
    let names = [
        "db",
        "cache",
        "mq",
        "primary",
        "prod-db-1",
        "api",
        "internal",
    ];
    format!(
        "{}.{}.example.com",
        rng.pick(&names),
        rng.string(LOWER_ALNUM, 4)
    )
}

pub fn user(rng: &mut Rng) -> &'static str {
    rng.pick::<&str>(&[
        "ada", "root", "admin", "deploy", "app_user", "svc-ci", "postgres",
    ])
}

pub fn split_at(rng: &mut Rng, value: &str) -> usize {
    let mut at = value.len() / 3 + rng.below(value.len() / 3 + 1);
    while !value.is_char_boundary(at) {
        at += 1;
    }
    at
}

pub fn pem_body(rng: &mut Rng, lines: usize) -> Vec<String> {
    (0..lines).map(|_| base64(&rng.bytes(48))).collect()
}

pub fn jwt(rng: &mut Rng) -> String {
    let header = base64(br#"{"alg":"HS256","typ":"JWT"}"#)
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_");
    let claims = format!(
        r#"{{"sub":"{}","iat":{}}}"#,
        rng.below(100_000),
        1_700_000_000 + rng.below(1_000_000)
    );
    let claims = base64(claims.as_bytes())
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_");
    let sig = base64(&rng.bytes(32))
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_");
    format!("{header}.{claims}.{sig}")
}

/// A provider key in its well-known format.
pub fn cloud_key(rng: &mut Rng) -> String {
    match rng.below(14) {
        0 => format!("AKIA{}", rng.string(UPPER_ALNUM, 16)),
        1 => format!("ghp_{}", rng.string(ALNUM, 36)),
        2 => format!(
            "github_pat_11{}_{}",
            rng.string(UPPER_ALNUM, 20),
            rng.string(ALNUM, 59)
        ),
        3 => format!(
            "xoxb-{}-{}-{}",
            rng.string(b"0123456789", 11),
            rng.string(b"0123456789", 12),
            rng.string(ALNUM, 24)
        ),
        4 => format!("sk_live_{}", rng.string(ALNUM, 24)),
        5 => format!("AIza{}", rng.string(ALNUM, 35)),
        6 => format!("sk-{}", rng.string(ALNUM, 48)),
        7 => format!("sk-proj-{}", rng.string(ALNUM, 64)),
        8 => format!("sk-ant-api03-{}", rng.string(ALNUM, 80)),
        9 => jwt(rng),
        10 => format!("glpat-{}", rng.string(ALNUM, 20)),
        11 => format!("npm_{}", rng.string(ALNUM, 36)),
        12 => format!("hf_{}", rng.string(ALNUM, 34)),
        _ => format!("SG.{}.{}", rng.string(ALNUM, 22), rng.string(ALNUM, 43)),
    }
}
