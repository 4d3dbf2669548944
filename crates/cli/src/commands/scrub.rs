//! `oxydra scrub [FILE] [--json]`: redact secrets from a file (or stdin) to stdout.

use std::io::{Read, Write};

use serde_json::json;

use crate::args::ScrubArgs;
use crate::error::CliError;
use crate::exit_code::Exit;

/// Runs `oxydra scrub`.
pub fn run(args: &ScrubArgs) -> Result<Exit, CliError> {
    let input = match &args.file {
        Some(path) => std::fs::read(path).map_err(|source| CliError::ReadFile {
            path: path.clone(),
            source,
        })?,
        None => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut bytes)
                .map_err(|source| CliError::Stdio {
                    what: "cannot read stdin",
                    source,
                })?;
            bytes
        }
    };
    let text = String::from_utf8_lossy(&input);
    let rendered = render(&text, args.json);
    let mut out = std::io::stdout().lock();
    out.write_all(rendered.as_bytes())
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)?;
    Ok(Exit::Done)
}

/// The scrubbed text, or (with `json`) `{"text", "redactions":[{start,end,kind}]}` and a newline.
pub fn render(text: &str, as_json: bool) -> String {
    let scrubbed = oxydra::scrubbing::scrub(text);
    if !as_json {
        return scrubbed.text.into_owned();
    }
    let redactions: Vec<serde_json::Value> = scrubbed
        .redactions
        .iter()
        .map(|redaction| {
            json!({
                "start": redaction.range.start,
                "end": redaction.range.end,
                "kind": redaction.kind.as_str(),
            })
        })
        .collect();
    let value = json!({ "text": scrubbed.text, "redactions": redactions });
    format!("{value}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_located() {
        let input = "user=bob\napi_key: \"sk-proj-4f9aQ7zL2mX8vB1nR6tY3wK5\"\n";
        let text = render(input, false);
        assert!(!text.contains("sk-proj-4f9aQ7zL2mX8vB1nR6tY3wK5"), "{text}");
        assert!(text.contains("user=bob"));
        let value: serde_json::Value = serde_json::from_str(&render(input, true)).unwrap();
        let redactions = value["redactions"].as_array().unwrap();
        assert!(!redactions.is_empty());
        let start = redactions[0]["start"].as_u64().unwrap() as usize;
        let end = redactions[0]["end"].as_u64().unwrap() as usize;
        assert!(input[start..end].contains("4f9aQ7zL2mX8"));
        assert!(redactions[0]["kind"].is_string());
        assert_eq!(render("nothing here\n", false), "nothing here\n");
    }
}
