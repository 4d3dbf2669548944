//! Positive cases: each format combined with many generated secret values.

use super::values::{ALNUM, HEX, LOWER_ALNUM, Rng, SHAPES, UPPER_ALNUM, base64, secret};
use super::{Case, Doc};

type Gen = fn(&mut Rng, &str) -> Doc;

/// Secret names as environment variables.
const ENV_NAMES: &[&str] = &[
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
fn key_style(rng: &mut Rng, env: &str) -> String {
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

fn env_name(rng: &mut Rng) -> &'static str {
    rng.pick::<&str>(ENV_NAMES)
}

fn host(rng: &mut Rng) -> String {
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

fn user(rng: &mut Rng) -> &'static str {
    rng.pick::<&str>(&[
        "ada", "root", "admin", "deploy", "app_user", "svc-ci", "postgres",
    ])
}

fn split_at(rng: &mut Rng, value: &str) -> usize {
    let mut at = value.len() / 3 + rng.below(value.len() / 3 + 1);
    while !value.is_char_boundary(at) {
        at += 1;
    }
    at
}

fn pem_body(rng: &mut Rng, lines: usize) -> Vec<String> {
    (0..lines).map(|_| base64(&rng.bytes(48))).collect()
}

fn jwt(rng: &mut Rng) -> String {
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
fn cloud_key(rng: &mut Rng) -> String {
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

fn formats() -> Vec<(&'static str, &'static str, bool, Gen)> {
    vec![
        // --- env files and shell
        ("env", "dotenv", false, |r, v| {
            Doc::new()
                .t("NODE_ENV=production\n")
                .l(env_name(r))
                .t("=")
                .s(v)
                .t("\nPORT=8080\n")
        }),
        ("env", "dotenv-quoted", false, |r, v| {
            Doc::new().l(env_name(r)).t("=\"").s(v).t("\"\n")
        }),
        ("env", "dotenv-single", false, |r, v| {
            Doc::new().l(env_name(r)).t("='").s(v).t("'\n")
        }),
        ("env", "export", false, |r, v| {
            Doc::new()
                .t("$ export ")
                .l(env_name(r))
                .t("=")
                .s(v)
                .t("\n$ ./run.sh\n")
        }),
        ("env", "docker-run-e", false, |r, v| {
            Doc::new()
                .t("docker run -d -e ")
                .l(env_name(r))
                .t("=")
                .s(v)
                .t(" -p 80:80 nginx\n")
        }),
        ("env", "compose-map", false, |r, v| {
            Doc::new()
                .t("    environment:\n      ")
                .l(env_name(r))
                .t(": ")
                .s(v)
                .t("\n      TZ: UTC\n")
        }),
        ("env", "printenv", false, |r, v| {
            Doc::new()
                .t("HOME=/root\n")
                .l(env_name(r))
                .t("=")
                .s(v)
                .t("\nSHELL=/bin/bash\n")
        }),
        // --- YAML
        ("yaml", "inline", false, |r, v| {
            let k = {
                let e = env_name(r);
                key_style(r, e)
            };
            Doc::new()
                .t("service:\n  host: 10.0.0.4\n  ")
                .l(&k)
                .t(": ")
                .s(v)
                .t("\n  port: 5432\n")
        }),
        ("yaml", "quoted", false, |r, v| {
            let k = {
                let e = env_name(r);
                key_style(r, e)
            };
            Doc::new().t("  ").l(&k).t(": \"").s(v).t("\"\n")
        }),
        ("yaml", "next-line", false, |r, v| {
            let k = {
                let e = env_name(r);
                key_style(r, e)
            };
            Doc::new()
                .t("smtp:\n  ")
                .l(&k)
                .t(":\n    ")
                .s(v)
                .t("\n  port: 587\n")
        }),
        ("yaml", "block", false, |r, v| {
            let k = {
                let e = env_name(r);
                key_style(r, e)
            };
            let ind = *r.pick(&["|", "|-", ">", ">-"]);
            Doc::new()
                .t("creds:\n  ")
                .l(&k)
                .t(&format!(": {ind}\n    "))
                .s(v)
                .t("\n  region: eu-west-1\n")
        }),
        ("yaml", "k8s-env", false, |r, v| {
            Doc::new()
                .t("        env:\n        - name: ")
                .l(env_name(r))
                .t("\n          value: \"")
                .s(v)
                .t("\"\n        - name: LOG_LEVEL\n          value: info\n")
        }),
        // --- JSON
        ("json", "key-value", false, |r, v| {
            let k = {
                let e = env_name(r);
                key_style(r, e)
            };
            Doc::new()
                .t("{\n  \"host\": \"db\",\n  \"")
                .l(&k)
                .t("\": \"")
                .s(v)
                .t("\",\n  \"port\": 5432\n}")
        }),
        ("json", "name-value", false, |r, v| {
            let k = {
                let e = env_name(r);
                key_style(r, e)
            };
            let (n, val) = *r.pick(&[
                ("name", "value"),
                ("Name", "Value"),
                ("key", "value"),
                ("ParameterKey", "ParameterValue"),
            ]);
            Doc::new()
                .t(&format!("[{{\"{n}\": \""))
                .l(&k)
                .t(&format!("\", \"{val}\": \""))
                .s(v)
                .t("\"}]")
        }),
        ("json", "escaped", false, |r, v| {
            let k = {
                let e = env_name(r);
                key_style(r, e)
            };
            Doc::new()
                .t("{\"body\": \"{\\\"")
                .l(&k)
                .t("\\\": \\\"")
                .s(v)
                .t("\\\"}\"}")
        }),
        // --- TOML / INI
        ("toml", "table", false, |r, v| {
            let k = {
                let e = env_name(r);
                key_style(r, e)
            }
            .replace('-', "_");
            Doc::new()
                .t("[database]\nurl = \"db:5432\"\n")
                .l(&k)
                .t(" = \"")
                .s(v)
                .t("\"\n")
        }),
        ("toml", "literal", false, |r, v| {
            let k = {
                let e = env_name(r);
                key_style(r, e)
            }
            .replace('-', "_");
            Doc::new().l(&k).t(" = '").s(v).t("'\n")
        }),
        ("ini", "section", false, |r, v| {
            let k = {
                let e = env_name(r);
                key_style(r, e)
            };
            Doc::new()
                .t("[client]\nuser = app\n")
                .l(&k)
                .t(" = ")
                .s(v)
                .t("\n")
        }),
        ("ini", "ado-connection", false, |r, v| {
            Doc::new()
                .t(&format!(
                    "Server=tcp:{},1433;Database=app;User ID=sa;",
                    host(r)
                ))
                .l("Password")
                .t("=")
                .s(v)
                .t(";Encrypt=True;")
        }),
        // --- XML and HTML
        ("xml", "element", false, |r, v| {
            let k = *r.pick(&[
                "password",
                "Password",
                "dbPassword",
                "secret",
                "apiKey",
                "token",
                "pass",
                "adminPassword",
                "clientSecret",
            ]);
            Doc::new()
                .t("<config>\n  <user>ada</user>\n  <")
                .l(k)
                .t(">")
                .s(v)
                .t(&format!("</{k}>\n</config>"))
        }),
        ("xml", "appsettings", false, |r, v| {
            let k = {
                let e = env_name(r);
                key_style(r, e)
            };
            Doc::new()
                .t("<appSettings>\n  <add key=\"")
                .l(&k)
                .t("\" value=\"")
                .s(v)
                .t("\" />\n</appSettings>")
        }),
        ("xml", "property", false, |r, v| {
            let k = *r.pick(&[
                "db.password",
                "hibernate.connection.password",
                "mail.smtp.password",
                "jwt.secret",
                "api.token",
            ]);
            if r.below(2) == 0 {
                Doc::new()
                    .t("<property name=\"")
                    .l(k)
                    .t("\" value=\"")
                    .s(v)
                    .t("\"/>")
            } else {
                Doc::new()
                    .t("<entry key=\"")
                    .l(k)
                    .t("\">")
                    .s(v)
                    .t("</entry>")
            }
        }),
        ("xml", "attribute", false, |r, v| {
            let k = *r.pick(&["password", "secret", "token", "apiKey"]);
            Doc::new()
                .t(&format!("<user name=\"{}\" ", user(r)))
                .l(k)
                .t("=\"")
                .s(v)
                .t("\"/>")
        }),
        ("html", "input-password", false, |r, v| {
            let n = *r.pick(&["password", "pwd", "pass", "passwd", "user_password"]);
            Doc::new()
                .t("<form method=post><input type=\"password\" name=\"")
                .l(n)
                .t("\" value=\"")
                .s(v)
                .t("\"></form>")
        }),
        ("html", "input-hidden", false, |r, v| {
            let n = *r.pick(&[
                "csrf_token",
                "api_key",
                "authenticity_token",
                "client_secret",
                "access_token",
            ]);
            Doc::new()
                .t("<input type=\"hidden\" name=\"")
                .l(n)
                .t("\" value=\"")
                .s(v)
                .t("\">")
        }),
        ("html", "input-value-first", false, |r, v| {
            let n = *r.pick(&["password", "api_key", "token", "secret"]);
            Doc::new()
                .t("<input value=\"")
                .s(v)
                .t("\" type=\"password\" name=\"")
                .l(n)
                .t("\">")
        }),
        // --- URLs
        ("url", "userinfo", true, |r, v| {
            Doc::new()
                .t(&format!("GET https://{}:", user(r)))
                .s(v)
                .t(&format!("@{}/v1/items", host(r)))
        }),
        ("url", "query-key", true, |r, v| {
            let k = *r.pick(&[
                "key",
                "api_key",
                "apikey",
                "access_token",
                "token",
                "password",
                "client_secret",
                "sig",
                "secret",
                "auth",
                "apiKey",
            ]);
            Doc::new()
                .t(&format!("fetching https://{}/v1/data?", host(r)))
                .l(k)
                .t("=")
                .s(v)
                .t("&fields=id,name\n")
        }),
        ("url", "query-second", true, |r, v| {
            let k = *r.pick(&["key", "access_token", "token", "sig", "password"]);
            Doc::new()
                .t("https://maps.example.com/api/geocode/json?address=Main+St&")
                .l(k)
                .t("=")
                .s(v)
        }),
        // --- command lines
        ("cli", "mysql-p", true, |r, v| {
            Doc::new()
                .t(&format!("$ mysql -h {} -u {} ", host(r), user(r)))
                .l("-p")
                .s(v)
                .t(" appdb\n")
        }),
        ("cli", "mysql-p-quoted", true, |r, v| {
            Doc::new()
                .t(&format!("mysqldump -u{} ", user(r)))
                .l("-p'")
                .s(v)
                .t("' --all-databases > dump.sql")
        }),
        ("cli", "password-flag", true, |r, v| {
            let f = *r.pick(&[
                "--password ",
                "--password=",
                "--db-password ",
                "--token ",
                "--api-key=",
                "--client-secret ",
                "--passphrase ",
            ]);
            Doc::new().t("./deploy ").l(f).s(v).t(" --verbose")
        }),
        ("cli", "sshpass", true, |r, v| {
            let sep = *r.pick(&[" ", ""]);
            Doc::new()
                .l("sshpass -p")
                .t(sep)
                .s(v)
                .t(&format!(" ssh {}@{}", user(r), host(r)))
        }),
        ("cli", "curl-u", true, |r, v| {
            Doc::new()
                .t(&format!("curl -s -u {}:", user(r)))
                .s(v)
                .t(" https://api.example.com/v2/status")
        }),
        ("cli", "redis-cli-a", true, |r, v| {
            Doc::new()
                .t(&format!("redis-cli -h {} ", host(r)))
                .l("-a")
                .t(" ")
                .s(v)
                .t(" ping")
        }),
        ("cli", "docker-login", true, |r, v| {
            Doc::new()
                .t(&format!("docker login -u {} ", user(r)))
                .l("-p")
                .t(" ")
                .s(v)
                .t(" registry.example.com")
        }),
        // --- HTTP headers
        ("http", "authorization", false, |r, v| {
            let s = *r.pick(&["Bearer ", "Token ", ""]);
            Doc::new()
                .l("Authorization")
                .t(&format!(": {s}"))
                .s(v)
                .t("\r\nAccept: */*\r\n")
        }),
        ("http", "basic", false, |r, v| {
            let b = base64(format!("{}:{v}", user(r)).as_bytes());
            Doc::new().l("Authorization").t(": Basic ").s(&b).t("\r\n")
        }),
        ("http", "cookie", false, |r, v| {
            let n = *r.pick(&[
                "session",
                "sessionid",
                "sid",
                "JSESSIONID",
                "connect.sid",
                "_session_id",
                "auth",
            ]);
            Doc::new()
                .t("Cookie: theme=dark; ")
                .l(n)
                .t("=")
                .s(v)
                .t("\r\n")
        }),
        ("http", "set-cookie", false, |r, v| {
            let n = *r.pick(&["session", "sessionid", "PHPSESSID", "remember_token", "sid"]);
            Doc::new()
                .t("Set-Cookie: ")
                .l(n)
                .t("=")
                .s(v)
                .t("; Path=/; HttpOnly; Secure\r\n")
        }),
        ("http", "api-key-header", false, |r, v| {
            let h = *r.pick(&[
                "X-Api-Key",
                "X-Auth-Token",
                "Private-Token",
                "Api-Key",
                "X-Vault-Token",
                "X-API-KEY",
                "apikey",
            ]);
            Doc::new()
                .t("curl -H '")
                .l(h)
                .t(": ")
                .s(v)
                .t("' https://api.example.com")
        }),
        // --- Docker and registries
        ("docker", "config-auth", false, |r, v| {
            let b = base64(format!("{}:{v}", user(r)).as_bytes());
            Doc::new()
                .t("{\n  \"auths\": {\n    \"https://index.docker.io/v1/\": {\n      \"")
                .l("auth")
                .t("\": \"")
                .s(&b)
                .t("\"\n    }\n  }\n}")
        }),
        ("docker", "npmrc", false, |r, v| {
            if r.below(2) == 0 {
                Doc::new()
                    .t("//registry.npmjs.org/:")
                    .l("_authToken")
                    .t("=")
                    .s(v)
                    .t("\n")
            } else {
                let b = base64(format!("{}:{v}", user(r)).as_bytes());
                Doc::new().l("_auth").t("=").s(&b).t("\nalways-auth=true\n")
            }
        }),
        ("docker", "base64-pair", false, |r, v| {
            let b = base64(format!("{}:{v}", user(r)).as_bytes());
            Doc::new().t("$ echo ").s(&b).t(" | base64 -d")
        }),
        ("docker", "base64-keys", false, |r, v| {
            let plain = format!(
                "AWS_ACCESS_KEY_ID=AKIA{}\nAWS_SECRET_ACCESS_KEY={v}\n",
                r.string(UPPER_ALNUM, 16)
            );
            Doc::new()
                .t("payload ")
                .s(&base64(plain.as_bytes()))
                .t(" end")
        }),
        // --- private keys
        ("pem", "block", false, |r, _| {
            let kind = *r.pick(&["RSA ", "EC ", "OPENSSH ", "", "ENCRYPTED "]);
            let body = {
                let n = 3 + r.below(6);
                pem_body(r, n)
            };
            let mut d = Doc::new().t(&format!("-----BEGIN {kind}PRIVATE KEY-----\n"));
            for line in &body {
                d = d.s(line).t("\n");
            }
            d.t(&format!("-----END {kind}PRIVATE KEY-----\n"))
        }),
        ("pem", "truncated", false, |r, _| {
            let body = {
                let n = 2 + r.below(4);
                pem_body(r, n)
            };
            let mut d = Doc::new().t("$ cat id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n");
            for line in &body {
                d = d.s(line).t("\n");
            }
            d.t("[output truncated]")
        }),
        ("pem", "json-escaped", false, |r, _| {
            let body = {
                let n = 3 + r.below(4);
                pem_body(r, n)
            };
            let mut d = Doc::new()
                .t("{\"type\": \"service_account\", \"")
                .l("private_key")
                .t("\": \"-----BEGIN PRIVATE KEY-----\\n");
            for line in &body {
                d = d.s(line).t("\\n");
            }
            d.t("-----END PRIVATE KEY-----\\n\"}")
        }),
        ("pem", "yaml-block", false, |r, _| {
            let body = {
                let n = 3 + r.below(4);
                pem_body(r, n)
            };
            let mut d = Doc::new()
                .t("tls:\n  ")
                .l("key")
                .t(": |\n    -----BEGIN EC PRIVATE KEY-----\n");
            for line in &body {
                d = d.t("    ").s(line).t("\n");
            }
            d.t("    -----END EC PRIVATE KEY-----\n")
        }),
        ("pem", "wrapped-header", false, |r, _| {
            let body = pem_body(r, 3);
            let mut d = Doc::new().t("-----BEGIN PRIVATE KEY-----");
            for line in &body {
                d = d.t(" ").s(line);
            }
            d.t(" -----END PRIVATE KEY-----")
        }),
        // --- well-known cloud formats, unlabelled
        ("cloud", "prose", false, |r, _| {
            let k = cloud_key(r);
            Doc::new().t("Use ").s(&k).t(" for the staging job.")
        }),
        ("cloud", "json-value", false, |r, _| {
            let k = cloud_key(r);
            Doc::new()
                .t("{\"value\": \"")
                .s(&k)
                .t("\", \"kind\": \"cred\"}")
        }),
        ("cloud", "log-line", false, |r, _| {
            let k = cloud_key(r);
            Doc::new()
                .t("2026-11-23T10:00:00Z DEBUG loaded credential ")
                .s(&k)
                .t(" from cache")
        }),
        ("cloud", "aws-credentials", false, |r, _| {
            let id = format!("AKIA{}", r.string(UPPER_ALNUM, 16));
            let sk = r.string(ALNUM, 40);
            Doc::new()
                .t("[default]\naws_access_key_id = ")
                .s(&id)
                .t("\n")
                .l("aws_secret_access_key")
                .t(" = ")
                .s(&sk)
                .t("\n")
        }),
        // --- connection strings
        ("conn", "postgres", true, |r, v| {
            Doc::new()
                .t(&format!("DATABASE_URL=postgres://{}:", user(r)))
                .s(v)
                .t(&format!("@{}:5432/app?sslmode=require", host(r)))
        }),
        ("conn", "mongodb-srv", true, |r, v| {
            Doc::new()
                .t(&format!("mongodb+srv://{}:", user(r)))
                .s(v)
                .t("@cluster0.ab1cd.mongodb.net/?retryWrites=true&w=majority")
        }),
        ("conn", "redis", true, |r, v| {
            let u = if r.below(2) == 0 { "" } else { "default" };
            Doc::new()
                .t(&format!("REDIS_URL=redis://{u}:"))
                .s(v)
                .t(&format!("@{}:6379/0", host(r)))
        }),
        ("conn", "amqp-mysql", true, |r, v| {
            let s = *r.pick(&["amqp", "mysql", "mariadb", "mssql", "rediss"]);
            Doc::new()
                .t(&format!("{s}://{}:", user(r)))
                .s(v)
                .t(&format!("@{}/vhost", host(r)))
        }),
        ("conn", "jdbc", true, |r, v| {
            Doc::new()
                .t(&format!(
                    "jdbc:postgresql://{}:5432/app?user={}&",
                    host(r),
                    user(r)
                ))
                .l("password")
                .t("=")
                .s(v)
                .t("&ssl=true")
        }),
        ("conn", "azure-storage", false, |r, _| {
            let k = base64(&r.bytes(64));
            Doc::new()
                .t("DefaultEndpointsProtocol=https;AccountName=acme;")
                .l("AccountKey")
                .t("=")
                .s(&k)
                .t(";EndpointSuffix=core.windows.net")
        }),
        ("conn", "sentry-dsn", false, |r, _| {
            let k = r.string(HEX, 32);
            Doc::new().l("SENTRY_DSN").t("=https://").s(&k).t(&format!(
                "@o{}.ingest.sentry.io/{}",
                r.below(999_999),
                r.below(9999)
            ))
        }),
        // --- prose
        ("prose", "is", false, |r, v| {
            let k = *r.pick(&[
                "the admin password",
                "The root password",
                "my password",
                "the API key",
                "The new passphrase",
                "the DB password for staging",
                "the secret",
                "the token",
                "Wi-Fi password",
            ]);
            let verb = *r.pick(&[" is ", " was ", " is now ", " has been changed to "]);
            Doc::new()
                .t("Note: ")
                .l(k)
                .t(verb)
                .s(v)
                .t(if r.below(2) == 0 {
                    " - keep it safe"
                } else {
                    ""
                })
        }),
        ("prose", "colon", false, |r, v| {
            let k = *r.pick(&["Password", "password", "PW", "pw", "Passcode", "Pass"]);
            Doc::new().t("Login: ada\n").l(k).t(": ").s(v).t("\n")
        }),
        ("prose", "quoted", false, |r, v| {
            let k = *r.pick(&["password", "passphrase", "token", "API key"]);
            Doc::new()
                .t("Set the ")
                .l(k)
                .t(" to `")
                .s(v)
                .t("` before running.")
        }),
        ("prose", "with-password", false, |r, v| {
            let k = *r.pick(&["with password ", "using password ", "password "]);
            Doc::new()
                .t(&format!("Log in as {} ", user(r)))
                .l(k)
                .s(v)
                .t(" then run the migration")
        }),
        // --- split over two lines
        ("split", "labelled-wrap", false, |r, _| {
            let v = {
                let n = 48 + r.below(20);
                r.string(ALNUM, n)
            };
            let at = split_at(r, &v);
            let k = env_name(r);
            Doc::new()
                .l(k)
                .t("=")
                .s(&v[..at])
                .t("\n")
                .s(&v[at..])
                .t("\n")
        }),
        ("split", "known-wrap", false, |r, _| {
            let v = cloud_key(r);
            let at = split_at(r, &v).max(12).min(v.len() - 6);
            Doc::new()
                .t("key:\n")
                .s(&v[..at])
                .t("\n")
                .s(&v[at..])
                .t("\n")
        }),
        ("split", "yaml-folded", false, |r, _| {
            let v = {
                let n = 40 + r.below(20);
                r.string(ALNUM, n)
            };
            let at = split_at(r, &v);
            let k = {
                let e = env_name(r);
                key_style(r, e)
            };
            Doc::new()
                .t("  ")
                .l(&k)
                .t(": ")
                .s(&v[..at])
                .t("\n    ")
                .s(&v[at..])
                .t("\n  next: 1\n")
        }),
        ("split", "base64-wrap", false, |r, _| {
            let b = base64(&r.bytes(90));
            let (a, c) = b.split_at(76);
            Doc::new()
                .t("  ")
                .l("ssh_private_key")
                .t(": ")
                .s(a)
                .t("\n    ")
                .s(c)
                .t("\n")
        }),
        ("split", "concat", false, |r, _| {
            let v = r.string(ALNUM, 40);
            let at = split_at(r, &v);
            let k = {
                let e = env_name(r);
                key_style(r, e)
            }
            .replace('-', "_");
            Doc::new()
                .t("const ")
                .l(&k)
                .t(" = \"")
                .s(&v[..at])
                .t("\" +\n    \"")
                .s(&v[at..])
                .t("\";")
        }),
    ]
}

/// Formats that quote their values (so a value may contain blanks).
const QUOTED: &[&str] = &[
    "dotenv-quoted",
    "dotenv-single",
    "quoted",
    "k8s-env",
    "key-value",
    "name-value",
    "escaped",
    "table",
    "literal",
    "element",
    "appsettings",
    "attribute",
    "input-password",
    "input-hidden",
    "input-value-first",
];

/// Every format with every value shape, `per_format` cases each.
pub fn cases(per_format: usize) -> Vec<Case> {
    let mut rng = Rng::new(0x0c5d_1a7e);
    let mut out = Vec::new();
    for (family, name, url_safe, generate) in formats() {
        for i in 0..per_format {
            let shape = SHAPES[i % SHAPES.len()];
            let value = secret(&mut rng, shape, url_safe, QUOTED.contains(&name));
            out.push(generate(&mut rng, &value).case(family, name));
        }
    }
    out
}
