//! `--print-config`: the merged configuration as a TOML file that loads back as it is,
//! secrets masked (the key itself only in a comment, masked).

use serde::Serialize;

use super::ProviderKind;
use super::mask::{mask_secret, mask_url, masked_mcp_server};
use super::merge::Merged;
use super::provider_pick::EffectiveProvider;

/// The provider part of a printed configuration: there may be none yet.
pub trait PrintedProvider: Serialize + Clone {
    /// Masks what the printed form must not show (a password in the URL).
    fn mask(&mut self);
    /// The comment lines that say what the file cannot (the key, a missing provider).
    fn comment(&self) -> String;
}

impl PrintedProvider for EffectiveProvider {
    fn mask(&mut self) {
        self.base_url = if self.kind == ProviderKind::Local {
            // The model runs in-process: no URL to print (or to load back).
            String::new()
        } else {
            mask_url(&self.base_url)
        };
        for fallback in &mut self.fallback {
            fallback.mask();
        }
    }

    fn comment(&self) -> String {
        let key = self.key_comment();
        if self.kind == ProviderKind::Local {
            key + &small_model_comment()
        } else {
            key
        }
    }
}

/// What a small local model gets, which the configuration cannot show before the
/// model is loaded (`oxydra run` says it in its header once it is).
fn small_model_comment() -> String {
    format!(
        "# small model: a local model under 1B parameters is offered only the tools {} \
         (withheld: {}), and without tool_choice each run picks its own (docs/provider.md)\n",
        oxydra::runtime::SMALL_MODEL_TOOLS.join(", "),
        oxydra::runtime::SMALL_MODEL_WITHHELD_TOOLS.join(", ")
    )
}

impl EffectiveProvider {
    /// The comment line about the API key.
    fn key_comment(&self) -> String {
        match (&self.api_key, &self.api_key_env) {
            (Some(key), Some(env)) => {
                format!("# api key: {} (from {env})\n", mask_secret(key.expose()))
            }
            (Some(key), None) => format!("# api key: {}\n", mask_secret(key.expose())),
            (None, Some(env)) => {
                format!("# api key: {env} is not set; a run needs it (export {env}=...)\n")
            }
            (None, None) if self.kind == ProviderKind::Local => {
                "# api key: none (the model runs in this process)\n".to_owned()
            }
            (None, None) => "# api key: none (no auth header is sent)\n".to_owned(),
        }
    }
}

impl PrintedProvider for Option<EffectiveProvider> {
    fn mask(&mut self) {
        if let Some(provider) = self {
            provider.mask();
        }
    }

    fn comment(&self) -> String {
        match self {
            Some(provider) => provider.comment(),
            None => "# no provider configured yet: add a [provider] table (kind, base_url, \
                     model, api_key_env), or see `oxydra run --help`\n"
                .to_owned(),
        }
    }
}

impl<P: PrintedProvider> Merged<P> {
    /// The configuration as TOML, secrets masked, with a header saying where it came from.
    pub fn to_masked_toml(&self) -> String {
        let mut shown = self.clone();
        shown.provider.mask();
        // MCP servers often get their tokens through env, args or the URL.
        for server in &mut shown.mcp_servers {
            *server = masked_mcp_server(server);
        }
        let source = match (&self.config_file, &self.user_file) {
            (None, _) => "none (defaults, environment and flags)".to_owned(),
            (Some(path), None) => path.display().to_string(),
            (Some(path), Some(user)) => {
                format!("{} over {}", path.display(), user.display())
            }
        };
        let body = toml::to_string(&shown)
            .unwrap_or_else(|error| format!("# cannot render configuration: {error}\n"));
        let ignored = if self.ignored.is_empty() {
            String::new()
        } else {
            format!(
                "# not trusted, so ignored: {} (see `oxydra trust`)\n",
                oxydra_config::listed_ignored(&self.ignored)
            )
        };
        let mut comment = self.provider.comment();
        comment.push_str(&format!(
            "# workspace: {} (--workspace)\n",
            self.workspace.display()
        ));
        if let Some(session) = &self.session {
            comment.push_str(&format!("# session: {session} (--session)\n"));
        }
        format!(
            "# Effective oxydra configuration\n# config file: {source}\n{ignored}{comment}\n{body}"
        )
    }
}
