//! The checks of a kind's own provider settings (`--api`, `--reasoning-effort`,
//! `--thinking-budget` and their `[provider]` keys) against the provider crate's table:
//! set for a kind that does not take them, they are an error naming the flag or the key.

use oxydra::provider::{PROVIDERS, ProviderInfo};
use oxydra_config::LoadedFile;

use crate::args::{Effort, OpenAiApi, RunOptions};
use crate::error::CliError;

/// `--thinking-budget`, else `[provider] thinking_budget`, checked against what the
/// provider accepts (its row's `min_thinking_budget`): never 0, at least 1024 for
/// Anthropic, and not for OpenAI (whose models take `--reasoning-effort` instead). The
/// error names the flag or the key.
pub(super) fn thinking_budget(
    file: &LoadedFile,
    flags: &RunOptions,
    info: &ProviderInfo,
) -> Result<Option<u32>, CliError> {
    let Some(budget) = flags
        .thinking_budget
        .or(file.config.provider.thinking_budget)
    else {
        return Ok(None);
    };
    let problem = match info.min_thinking_budget {
        _ if budget == 0 => Some("expected a number of tokens above 0, found 0".to_owned()),
        None => Some(format!(
            "a thinking budget applies to {}; {} models take a reasoning effort instead",
            budget_kinds(),
            info.display_name
        )),
        Some(least) if budget < least => Some(format!(
            "{} needs at least {least} tokens, found {budget}",
            info.display_name
        )),
        Some(_) => None,
    };
    let Some(message) = problem else {
        return Ok(Some(budget));
    };
    Err(match &file.path {
        Some(path) if flags.thinking_budget.is_none() => {
            CliError::Config(oxydra_config::ConfigError::Invalid {
                path: path.clone(),
                key: "provider.thinking_budget".to_owned(),
                message: format!("invalid value for provider.thinking_budget: {message}"),
                line: None,
            })
        }
        _ => CliError::Flag {
            flag: "--thinking-budget",
            message,
        },
    })
}

/// The OpenAI API and reasoning effort (flags, then the file's `[provider]`): the API
/// belongs to the kinds with a Responses client, the effort to those that take one
/// (both `openai`, per the table); set for another kind, they are an error naming the
/// flag or the key.
pub(super) fn openai_settings(
    file: &LoadedFile,
    flags: &RunOptions,
    info: &ProviderInfo,
) -> Result<(Option<OpenAiApi>, Option<Effort>), CliError> {
    let section = &file.config.provider;
    let refuse =
        |flag: &'static str, key: &str, set_by_flag: bool, takes: fn(&ProviderInfo) -> bool| {
            let message = format!(
                "{} applies to provider kind {} only; this provider is `{}`",
                if set_by_flag { flag } else { key },
                kinds_that(takes),
                info.name
            );
            match (&file.path, set_by_flag) {
                (Some(path), false) => CliError::Config(oxydra_config::ConfigError::Invalid {
                    path: path.clone(),
                    key: key.to_owned(),
                    message: format!("invalid key {key}: {message}"),
                    line: None,
                }),
                _ => CliError::Flag { flag, message },
            }
        };
    let speaks_responses = |info: &ProviderInfo| info.build_responses.is_some();
    let api = if speaks_responses(info) {
        Some(flags.api.or(section.api).unwrap_or_default())
    } else if flags.api.is_some() || section.api.is_some() {
        return Err(refuse(
            "--api",
            "provider.api",
            flags.api.is_some(),
            speaks_responses,
        ));
    } else {
        None
    };
    let effort = flags.reasoning_effort.or(section.reasoning_effort);
    if effort.is_some() && !info.reasoning_effort {
        return Err(refuse(
            "--reasoning-effort",
            "provider.reasoning_effort",
            flags.reasoning_effort.is_some(),
            |info| info.reasoning_effort,
        ));
    }
    Ok((api, effort))
}

/// The kinds of the table for which `takes` holds, as a message lists them:
/// `` `openai` ``, or `` `openai` or `gemini` ``.
fn kinds_that(takes: fn(&ProviderInfo) -> bool) -> String {
    let names: Vec<String> = PROVIDERS
        .iter()
        .filter(|info| takes(info))
        .map(|info| format!("`{}`", info.name))
        .collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The kinds that take a thinking budget, as messages name them: `Anthropic and Gemini`.
fn budget_kinds() -> String {
    let names: Vec<&str> = PROVIDERS
        .iter()
        .filter(|info| info.min_thinking_budget.is_some())
        .map(|info| info.display_name)
        .collect();
    match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}
