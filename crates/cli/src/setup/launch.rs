//! Where the stdio `[[mcp_servers]]` of a trusted configuration without a `cwd` start:
//! as the `[[hooks]]` commands do, in the process's private empty directory
//! ([`oxydra::executor::private_launch_dir`], removed at exit), never in the workspace,
//! their relative words naming existing paths made absolute first
//! ([`oxydra::executor::anchored_command`]) against the configuration file's directory,
//! then the current directory ([`crate::config::lookup_dirs`]).
//!
//! A server's `env` values and `headers` may name a secret handle (`{{secret:NAME}}`,
//! `[secrets.NAME]`) whose `tools` include `mcp:<server>`: the value is put in here, when
//! the server starts, and is scrubbed by value from everything the run produces like
//! every handle's. A handle not allowed for the server, or bound to hosts its `url` does
//! not name, refuses the start naming the key.

use std::path::Path;

use oxydra::executor::{SecretHandles, anchored_command, private_launch_dir};
use oxydra::mcp::McpServerConfig;
use serde_json::{Value, json};

use crate::config::lookup_dirs;
use crate::error::CliError;

/// The MCP servers `servers`, each stdio server without a `cwd` set to start in the
/// private directory, its command and arguments anchored (see the module docs).
pub fn mcp_servers(
    servers: &[McpServerConfig],
    config_file: Option<&Path>,
    handles: &SecretHandles,
) -> Result<Vec<McpServerConfig>, CliError> {
    let dirs = lookup_dirs(config_file);
    let mut ready = Vec::with_capacity(servers.len());
    for server in servers {
        let mut server = with_secrets(server, handles)?;
        if server.cwd.is_none()
            && let Some(command) = &server.command
        {
            let (command, args) = anchored_command(command, &server.args, &dirs);
            let dir = private_launch_dir().map_err(|error| {
                CliError::Mcp(format!(
                    "MCP server `{}`: cannot create the private directory it starts in: {error}",
                    server.name
                ))
            })?;
            server.command = Some(command);
            server.args = args;
            server.cwd = Some(dir);
        }
        ready.push(server);
    }
    Ok(ready)
}

/// `server` with the secret handles of its `env` values and `headers` put in (see the
/// module docs).
fn with_secrets(
    server: &McpServerConfig,
    handles: &SecretHandles,
) -> Result<McpServerConfig, CliError> {
    let fields = json!({
        "env": server.env,
        "headers": server.headers.0,
        "url": server.url,
    });
    let resolved = handles
        .resolve(&format!("mcp:{}", server.name), &fields)
        .map_err(|message| {
            CliError::Mcp(format!(
                "MCP server `{}` (`env` or `headers` of its [[mcp_servers]] entry): {message}",
                server.name
            ))
        })?;
    let mut server = server.clone();
    if let Some(resolved) = resolved {
        server.env = strings(&resolved, "env");
        server.headers.0 = strings(&resolved, "headers");
    }
    Ok(server)
}

/// The string map at `key` of `value`.
fn strings(value: &Value, key: &str) -> std::collections::BTreeMap<String, String> {
    value
        .get(key)
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .filter_map(|(name, v)| Some((name.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stdio_server_without_a_cwd_starts_in_the_private_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("oxydra.toml");
        std::fs::write(dir.path().join("srv.js"), "").unwrap();
        let parse = |text: &str| toml::from_str::<McpServerConfig>(text).unwrap();
        let servers = [
            parse("name = \"a\"\ncommand = \"node\"\nargs = [\"srv.js\"]"),
            parse("name = \"b\"\ncommand = \"node\"\ncwd = \"/opt\""),
            parse("name = \"c\"\nurl = \"http://127.0.0.1:1/mcp\""),
        ];
        let ready = mcp_servers(&servers, Some(&file), &SecretHandles::default()).unwrap();
        let private = private_launch_dir().unwrap();
        assert_eq!(ready[0].cwd.as_deref(), Some(private.as_path()));
        let canonical = dir.path().canonicalize().unwrap();
        assert_eq!(
            ready[0].args,
            [canonical.join("srv.js").display().to_string()]
        );
        assert_eq!(ready[1], servers[1]);
        assert_eq!(ready[2], servers[2]);
        assert!(private.is_dir());
        assert_eq!(std::fs::read_dir(&private).unwrap().count(), 0);
    }

    fn handles() -> SecretHandles {
        use oxydra::executor::SecretHandle;
        SecretHandles::default()
            .with(
                "GH",
                SecretHandle::new(
                    "ghp_value_of_the_secret_123",
                    ["mcp:github"],
                    Vec::<String>::new(),
                ),
            )
            .with(
                "API",
                SecretHandle::new("api-value-0123456789", ["mcp:remote"], ["mcp.example.com"]),
            )
    }

    #[test]
    fn a_handle_allowed_for_the_server_is_put_in_its_env_and_headers() {
        let parse = |text: &str| toml::from_str::<McpServerConfig>(text).unwrap();
        let servers = [
            parse(
                "name = \"github\"\ncommand = \"node\"\ncwd = \"/opt\"\nenv = { TOKEN = \"{{secret:GH}}\", PLAIN = \"x\" }",
            ),
            parse(
                "name = \"remote\"\nurl = \"https://mcp.example.com/mcp\"\nheaders = { Authorization = \"Bearer {{secret:API}}\" }",
            ),
        ];
        let ready = mcp_servers(&servers, None, &handles()).unwrap();
        assert_eq!(ready[0].env["TOKEN"], "ghp_value_of_the_secret_123");
        assert_eq!(ready[0].env["PLAIN"], "x");
        assert_eq!(
            ready[1].headers.0["Authorization"],
            "Bearer api-value-0123456789"
        );
        // The configuration as written (what `config show` prints) keeps the handle.
        assert_eq!(servers[0].env["TOKEN"], "{{secret:GH}}");
    }

    #[test]
    fn a_handle_for_another_server_or_host_refuses_the_start_and_names_the_server() {
        let parse = |text: &str| toml::from_str::<McpServerConfig>(text).unwrap();
        for (text, expected) in [
            // GH may be used by `mcp:github` only.
            (
                "name = \"evil\"\ncommand = \"node\"\ncwd = \"/opt\"\nenv = { T = \"{{secret:GH}}\" }",
                "mcp:github",
            ),
            // API is bound to mcp.example.com; this server is elsewhere.
            (
                "name = \"remote\"\nurl = \"https://attacker.example/mcp\"\nheaders = { A = \"{{secret:API}}\" }",
                "mcp.example.com",
            ),
            // Bound to a host, so never to a stdio server.
            (
                "name = \"remote\"\ncommand = \"node\"\ncwd = \"/opt\"\nenv = { A = \"{{secret:API}}\" }",
                "mcp.example.com",
            ),
            (
                "name = \"github\"\ncommand = \"node\"\ncwd = \"/opt\"\nenv = { T = \"{{secret:NOPE}}\" }",
                "no secret named `NOPE`",
            ),
        ] {
            let error = mcp_servers(&[parse(text)], None, &handles())
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{error}");
            assert!(
                !error.contains("ghp_value") && !error.contains("api-value"),
                "{error}"
            );
        }
    }
}
