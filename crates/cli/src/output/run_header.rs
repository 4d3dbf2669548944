//! The first line of `run` and `chat` on a terminal (text output): what runs, and
//! under which powers — provider and model, sandbox mode, how consent is answered,
//! and the workspace — as `codex exec` starts. It goes to stderr, so the answer on
//! stdout stays the answer.

use std::path::Path;

use crate::config::Effective;
use crate::terminal_text::one_line;

/// `oxydra run · openai gpt-4o-mini · sandbox workspace-write · approve ask ·
/// workspace /home/me/proj`. `command` is `run` or `chat`. Every part that comes from
/// outside (a model name, a path) is shown through the terminal sanitizer, on one line.
pub fn header_line(command: &str, effective: &Effective) -> String {
    let provider = &effective.provider;
    format!(
        "oxydra {command} · {} {} · sandbox {} · approve {} · workspace {}",
        provider.kind.as_str(),
        one_line(&short_model(&provider.model)),
        effective.tools.sandbox.mode,
        effective.approve().word(),
        one_line(&effective.workspace.display().to_string()),
    )
}

/// A model as the header and `sessions list` show it: a local model file by its file
/// name (the path is in `--print-config`), anything else as named.
pub fn short_model(model: &str) -> String {
    let path = Path::new(model);
    if model.ends_with(".gguf") && path.components().count() > 1 {
        return path.file_name().map_or_else(
            || model.to_owned(),
            |name| name.to_string_lossy().into_owned(),
        );
    }
    model.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_model_file_is_shown_by_its_name_and_others_as_named() {
        assert_eq!(
            short_model("/home/me/.local/share/oxydra/models/qwen.gguf"),
            "qwen.gguf"
        );
        assert_eq!(short_model("gpt-4o-mini"), "gpt-4o-mini");
        assert_eq!(
            short_model("hf:Qwen/Qwen2.5-1.5B-Instruct-GGUF/q.gguf"),
            "q.gguf"
        );
        assert_eq!(
            short_model("meta-llama/llama-3.1-8b"),
            "meta-llama/llama-3.1-8b"
        );
    }
}
