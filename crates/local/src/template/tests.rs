//! The renderer on the real templates of the common model families.

use oxydra_types::{CallId, Message, ToolCall, ToolSchema};
use serde_json::json;

use super::*;

const SMOLLM2: &str = include_str!("../../tests/templates/smollm2.jinja");
const QWEN2_5: &str = include_str!("../../tests/templates/qwen2_5.jinja");
const LLAMA3_1: &str = include_str!("../../tests/templates/llama3_1.jinja");
const MISTRAL: &str = include_str!("../../tests/templates/mistral_v0_3.jinja");
const GEMMA2: &str = include_str!("../../tests/templates/gemma2.jinja");

fn tools() -> Vec<ToolSchema> {
    vec![ToolSchema::new(
        "file_read",
        "Read a file",
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    )]
}

fn conversation(call_id: &str) -> Vec<Message> {
    vec![
        Message::system("You are terse."),
        Message::user("Read notes.txt"),
        Message::assistant_with_tool_calls(
            None,
            vec![ToolCall::new(
                CallId::from(call_id),
                "file_read",
                r#"{"path":"notes.txt"}"#,
            )],
        ),
        Message::tool_result(CallId::from(call_id), "file_read", "buy milk"),
    ]
}

#[test]
fn smollm2_chatml_without_tools_gets_instructions_in_the_system_turn() {
    let template = ChatTemplate::new(Some(SMOLLM2), "", "<|im_end|>").unwrap();
    assert!(!template.native_tools());
    assert_eq!(template.tool_format(), ToolFormat::Hermes);
    let prompt = template.render(&conversation("c1"), &tools()).unwrap();
    // The trained instructions first, the caller's system text after them.
    assert!(
        prompt.starts_with("<|im_start|>system\nYou are an expert in composing functions."),
        "{prompt}"
    );
    assert!(
        prompt.contains("]</tool_call>\n\nYou are terse.<|im_end|>\n"),
        "{prompt}"
    );
    // The compact list, name first.
    assert!(
        prompt.contains(
            "<tools>[{\"name\": \"file_read\", \"description\": \"Read a file\", \"parameters\": {"
        ),
        "{prompt}"
    );
    // Earlier calls as the model writes them.
    assert!(prompt.contains(
        "<|im_start|>assistant\n<tool_call>[\n{\"name\": \"file_read\", \"arguments\": {\"path\":\"notes.txt\"}}\n]</tool_call><|im_end|>\n"
    ), "{prompt}");
    // The result names its call, and the question comes again after it: the turn
    // the model answers in ends with what it must answer.
    assert!(
        prompt.contains(
            "<|im_start|>user\nfile_read {\"path\":\"notes.txt\"}:\n<tool_response>\nbuy milk\n</tool_response>\n\nUsing these results, answer in plain text (or call another tool if one is still needed): Read notes.txt<|im_end|>\n"
        ),
        "{prompt}"
    );
    assert!(prompt.ends_with("<|im_start|>assistant\n"), "{prompt}");
}

#[test]
fn the_question_is_repeated_only_in_the_turn_that_answers_from_results() {
    let template = ChatTemplate::new(Some(SMOLLM2), "", "<|im_end|>").unwrap();
    let mut messages = conversation("c1");
    messages.push(Message::assistant("You need milk."));
    messages.push(Message::user("Thanks"));
    let prompt = template.render(&messages, &tools()).unwrap();
    assert!(!prompt.contains("Using these results"), "{prompt}");
    assert!(
        prompt.contains("file_read {\"path\":\"notes.txt\"}:\n<tool_response>\nbuy milk"),
        "{prompt}"
    );
    // A result whose call is unknown (cut from the history) is still shown, unlabelled.
    let orphan = vec![
        Message::user("Read it"),
        Message::tool_result(CallId::from("gone"), "file_read", "text"),
    ];
    let prompt = template.render(&orphan, &tools()).unwrap();
    assert!(
        prompt.contains("<|im_start|>user\nRead it\n\n<tool_response>\ntext\n</tool_response>\n\nUsing these results"),
        "{prompt}"
    );
}

#[test]
fn smollm2_without_system_message_uses_its_default_persona() {
    let template = ChatTemplate::new(Some(SMOLLM2), "", "<|im_end|>").unwrap();
    let prompt = template.render(&[Message::user("hi")], &[]).unwrap();
    assert_eq!(
        prompt,
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn qwen_renders_tools_and_calls_natively() {
    let template = ChatTemplate::new(Some(QWEN2_5), "", "<|im_end|>").unwrap();
    assert!(template.native_tools());
    assert_eq!(template.tool_format(), ToolFormat::Hermes);
    let prompt = template.render(&conversation("c1"), &tools()).unwrap();
    assert!(
        prompt.starts_with("<|im_start|>system\nYou are terse.\n\n# Tools"),
        "{prompt}"
    );
    assert!(prompt.contains("<tools>\n{\"function\":"), "{prompt}");
    assert!(prompt.contains(
        "<|im_start|>assistant\n<tool_call>\n{\"name\": \"file_read\", \"arguments\": {\"path\":\"notes.txt\"}}\n</tool_call><|im_end|>"
    ), "{prompt}");
    assert!(
        prompt
            .contains("<|im_start|>user\n<tool_response>\nbuy milk\n</tool_response><|im_end|>\n"),
        "{prompt}"
    );
    assert!(prompt.ends_with("<|im_start|>assistant\n"));
}

#[test]
fn llama3_puts_tools_in_the_first_user_message_and_calls_as_json() {
    let template = ChatTemplate::new(Some(LLAMA3_1), "<|begin_of_text|>", "<|eot_id|>").unwrap();
    assert!(template.native_tools());
    assert_eq!(template.tool_format(), ToolFormat::Llama3Json);
    let prompt = template.render(&conversation("c1"), &tools()).unwrap();
    assert!(
        prompt.starts_with(
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nEnvironment: ipython\n"
        ),
        "{prompt}"
    );
    assert!(prompt.contains("Given the following functions"), "{prompt}");
    assert!(prompt.contains("\"name\": \"file_read\""), "{prompt}");
    assert!(
        prompt.contains(
            "{\"name\": \"file_read\", \"parameters\": {\"path\":\"notes.txt\"}}<|eot_id|>"
        ),
        "{prompt}"
    );
    assert!(
        prompt.contains("<|start_header_id|>ipython<|end_header_id|>\n\n"),
        "{prompt}"
    );
    assert!(prompt.ends_with("<|start_header_id|>assistant<|end_header_id|>\n\n"));
}

#[test]
fn mistral_lists_tools_before_the_last_user_message() {
    let template = ChatTemplate::new(Some(MISTRAL), "<s>", "</s>").unwrap();
    assert_eq!(template.tool_format(), ToolFormat::Mistral);
    let prompt = template
        .render(&conversation("abcdefghi"), &tools())
        .unwrap();
    assert!(
        prompt.starts_with("<s>[AVAILABLE_TOOLS] [{\"type\": \"function\""),
        "{prompt}"
    );
    assert!(prompt.contains("[INST] Read notes.txt[/INST]"), "{prompt}");
    assert!(prompt.contains("[TOOL_CALLS] [{\"arguments\":{\"path\":\"notes.txt\"},\"name\":\"file_read\", \"id\": \"abcdefghi\"}]</s>"), "{prompt}");
    assert!(
        prompt.ends_with(
            "[TOOL_RESULTS] {\"content\": buy milk, \"call_id\": \"abcdefghi\"}[/TOOL_RESULTS]"
        ),
        "{prompt}"
    );
}

#[test]
fn a_template_that_raises_is_a_template_error_with_its_message() {
    let template = ChatTemplate::new(Some(MISTRAL), "<s>", "</s>").unwrap();
    let error = template.render(&conversation("c1"), &tools()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("Tool call IDs should be alphanumeric"),
        "{error}"
    );
}

#[test]
fn gemma_refuses_system_so_it_is_merged_into_the_first_user_turn() {
    let template = ChatTemplate::new(Some(GEMMA2), "<bos>", "<eos>").unwrap();
    assert!(!template.native_tools());
    let prompt = template.render(&conversation("c1"), &tools()).unwrap();
    assert!(
        prompt.starts_with("<bos><start_of_turn>user\nYou are an expert in composing functions."),
        "{prompt}"
    );
    assert!(
        prompt.contains("You are terse.\n\nRead notes.txt<end_of_turn>"),
        "{prompt}"
    );
    assert!(
        prompt.contains("Read notes.txt<end_of_turn>\n<start_of_turn>model\n<tool_call>"),
        "{prompt}"
    );
    assert!(
        prompt.contains(
            "<start_of_turn>user\nfile_read {\"path\":\"notes.txt\"}:\n<tool_response>\nbuy milk\n</tool_response>\n\nUsing these results"
        ),
        "{prompt}"
    );
    assert!(prompt.ends_with("<start_of_turn>model\n"), "{prompt}");
}

#[test]
fn no_template_falls_back_to_chatml() {
    let template = ChatTemplate::new(None, "", "").unwrap();
    let prompt = template
        .render(&[Message::system("s"), Message::user("u")], &[])
        .unwrap();
    assert_eq!(
        prompt,
        "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nu<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn a_broken_template_is_an_error_not_a_panic() {
    assert!(ChatTemplate::new(Some("{% for x in %}"), "", "").is_err());
    let template = ChatTemplate::new(Some("{{ raise_exception('nope') }}"), "", "").unwrap();
    let error = template.render(&[Message::user("u")], &[]).unwrap_err();
    assert!(error.to_string().contains("nope"));
}

#[test]
fn strftime_now_formats_dates() {
    // 2024-07-26 13:05:09 UTC.
    assert_eq!(
        format_date(1_721_999_109, "%d %b %Y %H:%M:%S %%"),
        "26 Jul 2024 13:05:09 %"
    );
    assert_eq!(format_date(0, "%Y-%m-%d %B"), "1970-01-01 January");
    let template = ChatTemplate::new(Some("{{ strftime_now('%Y') }}"), "", "").unwrap();
    let year = template.render(&[Message::user("u")], &[]).unwrap();
    assert!(year.parse::<u32>().unwrap() >= 2024);
}
