//! `--tool-choice` / `[runtime] tool_choice`: the tool choice of a run's turns.

use std::sync::Arc;

use oxydra::provider::{Provider, ToolChoice};
use oxydra::runtime::{FirstCall, ToolChoicePolicy};
use oxydra::tools::ToolRegistry;

use crate::error::CliError;

/// The policy for `setting` (`auto`, `none`, `required` or the name of one of
/// `tools`); unset: `auto`, or for a small local model the first turn requires a call
/// and the turns after it answer in text (a model that small rarely decides to call a
/// tool, and rarely stops calling once it has).
pub fn policy(
    setting: Option<&str>,
    tools: &ToolRegistry,
    provider: &dyn Provider,
) -> Result<Arc<dyn ToolChoicePolicy>, CliError> {
    let Some(setting) = setting.map(str::trim) else {
        return Ok(if is_small_local(provider) {
            Arc::new(FirstCall {
                first: ToolChoice::Required,
                then: ToolChoice::None,
            })
        } else {
            Arc::new(ToolChoice::Auto)
        });
    };
    let choice = match setting {
        "auto" => ToolChoice::Auto,
        "none" => ToolChoice::None,
        "required" => ToolChoice::Required,
        name if tools.contains(name) => ToolChoice::Tool(name.to_owned()),
        other => {
            return Err(CliError::Flag {
                flag: "--tool-choice",
                message: format!(
                    "expected auto, none, required or a tool's name, found `{other}` \
                     (also from [runtime] tool_choice); the tools are: {}",
                    tools.names().join(", ")
                ),
            });
        }
    };
    Ok(Arc::new(choice))
}

/// The tool choice of a small local model's run on `prompt` in `workspace` (when the
/// configuration sets none): its first turn must call `file_read` when the prompt names
/// a file of the workspace, `file_write` when it names a file that does not exist yet
/// and asks for one to be written ([`asks_to_write`]), `file_search` when it names a
/// directory and asks which file holds something ([`asks_to_search`]), `file_list`
/// when it names only a directory, any tool otherwise; its later turns answer in text. A model that small,
/// free to pick among the file tools, often lists the folder of the file it was asked
/// about and answers from imagination, or lists the folder it was asked to write in.
#[cfg(feature = "local")]
pub fn small_model_first_call(workspace: &std::path::Path, prompt: &str) -> FirstCall {
    let asked = oxydra::types::Message::user(prompt);
    let (files, dirs) = super::workspace_paths::named_paths(workspace, [&asked]);
    let first = if !files.is_empty() {
        ToolChoice::Tool("file_read".to_owned())
    } else if asks_to_write(prompt)
        && !super::workspace_paths::named_new_files(workspace, [&asked]).is_empty()
    {
        ToolChoice::Tool("file_write".to_owned())
    } else if !dirs.is_empty() && asks_to_search(prompt) {
        ToolChoice::Tool("file_search".to_owned())
    } else if !dirs.is_empty() {
        ToolChoice::Tool("file_list".to_owned())
    } else {
        ToolChoice::Required
    };
    FirstCall {
        first,
        then: ToolChoice::None,
    }
}

/// Without the embedded model there is no small local model: any first call, then text.
#[cfg(not(feature = "local"))]
pub fn small_model_first_call(_workspace: &std::path::Path, _prompt: &str) -> FirstCall {
    FirstCall {
        first: ToolChoice::Required,
        then: ToolChoice::None,
    }
}

/// The verbs that ask for a file to be written.
#[cfg_attr(not(feature = "local"), allow(dead_code))]
const WRITE_VERBS: [&str; 6] = ["create", "write", "save", "make", "store", "generate"];

/// Whether `prompt` asks for something to be written: it holds one of
/// [`WRITE_VERBS`] as a word, in any case.
#[cfg_attr(not(feature = "local"), allow(dead_code))]
pub fn asks_to_write(prompt: &str) -> bool {
    holds_a_word_of(prompt, &WRITE_VERBS)
}

/// The words that ask which file holds something.
#[cfg_attr(not(feature = "local"), allow(dead_code))]
const SEARCH_WORDS: [&str; 5] = ["mention", "mentions", "contains", "search", "grep"];

/// Whether `prompt` asks which file holds something: it holds one of
/// [`SEARCH_WORDS`] as a word, in any case. A listing shows names, not what the
/// files say.
#[cfg_attr(not(feature = "local"), allow(dead_code))]
pub fn asks_to_search(prompt: &str) -> bool {
    holds_a_word_of(prompt, &SEARCH_WORDS)
}

/// Whether `prompt` holds one of `words` as a whole word (split at anything not a
/// letter), in any case.
#[cfg_attr(not(feature = "local"), allow(dead_code))]
fn holds_a_word_of(prompt: &str, words: &[&str]) -> bool {
    prompt
        .split(|c: char| !c.is_alphabetic())
        .any(|word| words.iter().any(|known| word.eq_ignore_ascii_case(known)))
}

/// Whether a run gets the small-model default tool choice: a small local model and no
/// `--tool-choice` / `[runtime] tool_choice`.
pub fn small_model_default(setting: Option<&str>, provider: &dyn Provider) -> bool {
    setting.is_none() && is_small_local(provider)
}

/// The built-in tools a small local model is offered: the workspace file tools it can
/// tell apart. Each tool costs a small model prompt and a chance to pick the wrong one;
/// `shell_exec`, `web_fetch` and `file_edit` it rarely uses well.
pub const SMALL_MODEL_TOOLS: [&str; 4] = ["file_list", "file_read", "file_search", "file_write"];

/// The built-in tools of a run: all of them, or [`SMALL_MODEL_TOOLS`] for a small
/// local model.
pub fn builtin_tools(
    config: &oxydra::tools::BuiltinToolsConfig,
    provider: &dyn Provider,
) -> ToolRegistry {
    let all = ToolRegistry::with_builtins(config);
    if !is_small_local(provider) {
        return all;
    }
    all.subset(&SMALL_MODEL_TOOLS).unwrap_or(all)
}

/// The provider of a run in `workspace`: a small local model gets the workspace's
/// paths as the choices of its file tools' `path` arguments
/// ([`WorkspacePaths`](super::workspace_paths::WorkspacePaths)), so it names a file
/// that exists rather than the placeholder of its training (`/path/to/file.txt`);
/// any other provider is returned as it is.
#[cfg(feature = "local")]
pub fn with_workspace_paths(
    provider: Arc<dyn Provider>,
    workspace: &std::path::Path,
) -> Arc<dyn Provider> {
    let any: &dyn std::any::Any = provider.as_ref();
    match any.downcast_ref::<oxydra::local::LocalProvider>() {
        Some(local) if local.is_small() => Arc::new(local.clone().with_argument_choices(Arc::new(
            super::workspace_paths::WorkspacePaths::new(workspace),
        ))),
        _ => provider,
    }
}

/// Without the local model there is nothing to give paths to.
#[cfg(not(feature = "local"))]
pub fn with_workspace_paths(
    provider: Arc<dyn Provider>,
    _workspace: &std::path::Path,
) -> Arc<dyn Provider> {
    provider
}

#[cfg(feature = "local")]
fn is_small_local(provider: &dyn Provider) -> bool {
    let provider: &dyn std::any::Any = provider;
    provider
        .downcast_ref::<oxydra::local::LocalProvider>()
        .is_some_and(oxydra::local::LocalProvider::is_small)
}

#[cfg(not(feature = "local"))]
fn is_small_local(_provider: &dyn Provider) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxydra::provider::{OpenAiProvider, ProviderConfig};
    use oxydra::runtime::TurnInfo;
    use oxydra::tools::BuiltinToolsConfig;

    fn tools() -> ToolRegistry {
        ToolRegistry::with_builtins(&BuiltinToolsConfig::default())
    }

    fn remote() -> OpenAiProvider {
        OpenAiProvider::new(ProviderConfig::new("http://127.0.0.1:9/v1", None))
    }

    fn first(setting: Option<&str>) -> ToolChoice {
        policy(setting, &tools(), &remote())
            .unwrap()
            .choose(TurnInfo::new(1, 0))
    }

    #[cfg(feature = "local")]
    #[test]
    fn a_small_model_reads_the_file_a_prompt_names_first() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(workspace.path().join("notes")).unwrap();
        std::fs::write(workspace.path().join("notes/plan.md"), "teal").unwrap();
        let first = |prompt: &str| {
            small_model_first_call(workspace.path(), prompt).choose(TurnInfo::new(1, 0))
        };
        assert_eq!(
            first("What colour, according to notes/plan.md?"),
            ToolChoice::Tool("file_read".into())
        );
        assert_eq!(
            first("Which files are in the notes folder?"),
            ToolChoice::Tool("file_list".into())
        );
        // A path out of the workspace names nothing; nor does a missing file the
        // prompt does not ask to write.
        for prompt in [
            "Read ../notes/plan.md",
            "Read /etc/passwd",
            "What does greeting.txt say?",
            "Create ../escape.txt",
            "Write a poem, e.g. about 1.5 cats",
        ] {
            assert_eq!(first(prompt), ToolChoice::Required, "{prompt}");
        }
        // Once a call was made, the model answers.
        let policy = small_model_first_call(workspace.path(), "Read notes/plan.md");
        assert_eq!(policy.choose(TurnInfo::new(2, 1)), ToolChoice::None);
    }

    #[cfg(feature = "local")]
    #[test]
    fn a_small_model_writes_the_new_file_a_prompt_asks_for_first() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(workspace.path().join("notes")).unwrap();
        std::fs::write(workspace.path().join("notes/plan.md"), "teal").unwrap();
        let first = |prompt: &str| {
            small_model_first_call(workspace.path(), prompt).choose(TurnInfo::new(1, 0))
        };
        for prompt in [
            "Create a file named greeting.txt that says: hello",
            "WRITE notes/todo.md with three items",
            "save 'report.csv' in the notes folder",
        ] {
            assert_eq!(
                first(prompt),
                ToolChoice::Tool("file_write".into()),
                "{prompt}"
            );
        }
        // A file that exists is read, even when the prompt asks for a write.
        assert_eq!(
            first("Create a copy of notes/plan.md"),
            ToolChoice::Tool("file_read".into())
        );
        // No new file named: the write verb alone does not pick the tool.
        assert_eq!(
            first("Write a file in the notes folder"),
            ToolChoice::Tool("file_list".into())
        );
        assert_eq!(
            first("Which file in notes mentions the fence?"),
            ToolChoice::Tool("file_search".into())
        );
        assert!(asks_to_write("Please make it so"));
        assert!(asks_to_search("what CONTAINS x"));
        assert!(!asks_to_search("the research containers"));
        assert!(!asks_to_write("the remake of the writer's creation"));
    }

    #[test]
    fn the_words_and_tool_names_map_to_choices() {
        assert_eq!(first(None), ToolChoice::Auto);
        assert_eq!(first(Some("auto")), ToolChoice::Auto);
        assert_eq!(first(Some("none")), ToolChoice::None);
        assert_eq!(first(Some(" required ")), ToolChoice::Required);
        assert_eq!(
            first(Some("file_read")),
            ToolChoice::Tool("file_read".into())
        );
    }

    #[test]
    fn a_remote_model_gets_every_builtin_tool() {
        let tools = builtin_tools(&BuiltinToolsConfig::default(), &remote());
        assert_eq!(tools.names(), tools_names_all());
        for name in SMALL_MODEL_TOOLS {
            assert!(tools.contains(name), "{name} is a built-in tool");
        }
    }

    fn tools_names_all() -> Vec<String> {
        tools().names()
    }

    #[test]
    fn an_unknown_tool_is_an_error_naming_the_flag_and_the_tools() {
        let error = policy(Some("fiel_read"), &tools(), &remote())
            .err()
            .unwrap();
        let message = error.to_string();
        assert!(message.contains("--tool-choice"), "{message}");
        assert!(message.contains("fiel_read"), "{message}");
        assert!(message.contains("file_read"), "{message}");
    }
}
