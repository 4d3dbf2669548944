//! What only the service commands (`serve`, `agents list`, `mcp serve`) take from the
//! environment: the providers blueprints may name besides the configured one, and
//! `serve`'s bearer token. Read here, in the resolution step, so that the builders in
//! `setup/` read no environment.

use super::provider_pick::{EffectiveProvider, public_provider};
use super::{EnvLookup, ProviderKind, ServiceConfig};
use crate::error::CliError;

/// The variable `oxydra serve` reads its bearer token from when `[serve]` names none.
pub const SERVE_TOKEN_VAR: &str = "OXYDRA_SERVE_TOKEN";

/// The providers a blueprint can name with `provider = "<kind>"` besides the configured
/// one (`configured`, the kind it serves): each kind's public API whose standard key
/// variable is set.
pub(super) fn named_providers(
    configured: Option<ProviderKind>,
    env: EnvLookup<'_>,
) -> Vec<EffectiveProvider> {
    ProviderKind::all()
        .iter()
        .filter(|kind| Some(**kind) != configured)
        .filter_map(|kind| public_provider(*kind, env))
        .collect()
}

/// The bearer token: from the variable `[serve] auth_token_env` names (which must then
/// be set), else from `OXYDRA_SERVE_TOKEN`, else none. A variable that is set but empty
/// (or only whitespace) is an error naming it: it never means "no auth".
pub fn auth_token(settings: &ServiceConfig) -> Result<Option<String>, CliError> {
    let named = settings.serve.auth_token_env.as_deref();
    let var = named.unwrap_or(SERVE_TOKEN_VAR);
    let origin = || match named {
        Some(_) => format!(
            "serve.auth_token_env{}",
            settings
                .config_file
                .as_ref()
                .map_or_else(String::new, |path| format!(" in {}", path.display()))
        ),
        None => "oxydra serve".to_owned(),
    };
    match std::env::var_os(var) {
        None if named.is_none() => Ok(None),
        None => Err(CliError::Env {
            var: var.to_owned(),
            message: format!(
                "not set, but {} names it as the API's bearer token",
                origin()
            ),
        }),
        Some(value) => {
            let value = value.into_string().map_err(|_| CliError::Env {
                var: var.to_owned(),
                message: "not valid UTF-8".to_owned(),
            })?;
            let token = value.trim();
            if token.is_empty() {
                return Err(CliError::Env {
                    var: var.to_owned(),
                    message: format!(
                        "empty, but {} reads it as the API's bearer token: set a token, \
                         or unset the variable",
                        origin()
                    ),
                });
            }
            Ok(Some(token.to_owned()))
        }
    }
}
