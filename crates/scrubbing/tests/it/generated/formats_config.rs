//! Formats of configuration files: env, YAML, JSON, TOML, INI, XML, HTML.

use super::Doc;
use super::helpers::*;
use super::values::Rng;

/// `(family, format, url-safe values, generator)`.
pub type Format = (&'static str, &'static str, bool, fn(&mut Rng, &str) -> Doc);

pub fn formats() -> Vec<Format> {
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
    ]
}
