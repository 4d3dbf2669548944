//! A `before_tool` hook's answer that is JSON but no object denies the call (issue 42,
//! attack 14): `[null,null,null,null,null,null,null]` (which serde's derived
//! deserializer read as an empty answer, an allow), a number, a string, `null`.

use crate::common;

use common::{Sandbox, stderr};
use oxydra::tools::{SandboxSupport, sandbox_support};
use oxydra_test_support::{MockServer, openai};

/// The extra flags of a run: `full-access` where the kernel cannot confine (a hook
/// that cannot start would deny the call for another reason).
fn sandbox_flags() -> Vec<&'static str> {
    match sandbox_support() {
        SandboxSupport::Unavailable { .. } => vec!["--sandbox", "full-access"],
        _ => Vec::new(),
    }
}

#[test]
fn a_hook_answer_that_is_no_object_denies_the_call() {
    for answer in [
        "[null,null,null,null,null,null,null]",
        "7",
        "\"allow\"",
        "null",
    ] {
        let sandbox = Sandbox::new();
        let script = sandbox.path().join("answer.json");
        std::fs::write(&script, answer).unwrap();
        sandbox.write_trusted_config(&format!(
            "[[hooks]]\nevent = \"before_tool\"\nname = \"guard\"\n\
             command = [\"cat\", {:?}]\n",
            script.display().to_string()
        ));
        let server = MockServer::builder()
            .strict_openai()
            .replies(vec![
                openai::tool_calls(&[(
                    "call_w",
                    "file_write",
                    r#"{"path":"a.txt","content":"x"}"#,
                )]),
                openai::text("Done."),
            ])
            .start()
            .unwrap();
        let mut command = sandbox.oxydra_command(&server, "run");
        command
            .args(["--approve", "allow"])
            .args(sandbox_flags())
            .arg("Write a.txt");
        let output = command.output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{answer}: {}",
            stderr(&output)
        );
        assert!(
            !sandbox.workspace.join("a.txt").exists(),
            "{answer} allowed the call"
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 2, "{answer}: {requests:?}");
        let result = requests[1].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|message| message["role"] == "tool")
            .and_then(|message| message["content"].as_str())
            .unwrap()
            .to_owned();
        assert!(
            result.contains("hook `guard` denied `file_write`"),
            "{answer}: {result}"
        );
        assert!(
            result.contains("is not a JSON object"),
            "{answer}: {result}"
        );
    }
}
