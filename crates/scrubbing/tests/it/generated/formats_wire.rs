//! Formats of the wire and the terminal: URLs, command lines, HTTP, Docker, keys,
//! connection strings, prose and keys split over two lines.

use super::Doc;
use super::helpers::*;
use super::values::{ALNUM, HEX, UPPER_ALNUM, base64};

use super::formats_config::Format;

pub fn formats() -> Vec<Format> {
    vec![
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
