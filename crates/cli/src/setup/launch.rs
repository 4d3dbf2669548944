//! Where the stdio `[[mcp_servers]]` of a trusted configuration without a `cwd` start:
//! as the `[[hooks]]` commands do, in the process's private empty directory
//! ([`oxydra::executor::private_launch_dir`], removed at exit), never in the workspace,
//! their relative words naming existing paths made absolute first
//! ([`oxydra::executor::anchored_command`]) against the configuration file's directory,
//! then the current directory ([`crate::config::lookup_dirs`]).

use std::path::Path;

use oxydra::executor::{anchored_command, private_launch_dir};
use oxydra::mcp::McpServerConfig;

use crate::config::lookup_dirs;
use crate::error::CliError;

/// The MCP servers `servers`, each stdio server without a `cwd` set to start in the
/// private directory, its command and arguments anchored (see the module docs).
pub fn mcp_servers(
    servers: &[McpServerConfig],
    config_file: Option<&Path>,
) -> Result<Vec<McpServerConfig>, CliError> {
    let dirs = lookup_dirs(config_file);
    let mut ready = Vec::with_capacity(servers.len());
    for server in servers {
        let mut server = server.clone();
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
        let ready = mcp_servers(&servers, Some(&file)).unwrap();
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
}
