use serde_json::json;

use super::*;

const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUg==";
const PDF_B64: &str = "JVBERi0xLjc=";

#[test]
fn openai_chat_parts_in_their_documented_shape_pass() {
    let parts = vec![
        json!({"type": "text", "text": "look"}),
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}}),
        json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}),
        json!({"type": "file", "file": {"filename": "a.pdf", "file_data": format!("data:application/pdf;base64,{PDF_B64}")}}),
        json!({"type": "file", "file": {"file_id": "file-1"}}),
    ];
    check_openai_content("user", &parts, "messages[0].content").unwrap();
}

#[test]
fn openai_chat_refuses_what_the_api_refuses() {
    let cases = [
        (
            "user",
            json!({"type": "image", "source": {}}),
            "Invalid value: 'image'",
        ),
        (
            "user",
            json!({"type": "image_url", "url": "https://x/a.png"}),
            "image_url'",
        ),
        (
            "user",
            json!({"type": "image_url", "image_url": "https://x/a.png"}),
            "image_url.url'",
        ),
        (
            "user",
            json!({"type": "image_url", "image_url": {"url": "data:application/pdf;base64,AAAA"}}),
            "unsupported MIME type 'application/pdf'",
        ),
        (
            "user",
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,!!"}}),
            "base64",
        ),
        (
            "user",
            json!({"type": "image_url", "image_url": {"url": "ftp://x"}}),
            "invalid format",
        ),
        (
            "user",
            json!({"type": "file", "file": {"file_data": format!("data:application/pdf;base64,{PDF_B64}")}}),
            "file.filename",
        ),
        (
            "user",
            json!({"type": "file", "file": {"filename": "a.pdf", "file_data": PDF_B64}}),
            "PDF",
        ),
        (
            "user",
            json!({"type": "file", "file": {"filename": "a.pdf"}}),
            "file.file_data",
        ),
        (
            "tool",
            json!({"type": "image_url", "image_url": {"url": "https://x/a.png"}}),
            "Supported values are: 'text'",
        ),
        (
            "system",
            json!({"type": "file", "file": {"file_id": "f"}}),
            "Supported values are: 'text'",
        ),
        ("user", json!({"text": "no type"}), "type'"),
    ];
    for (role, part, expected) in cases {
        let error = check_openai_content(role, std::slice::from_ref(&part), "messages[0].content")
            .unwrap_err();
        assert!(error.contains(expected), "{part}: {error}");
    }
}

#[test]
fn responses_parts_pass_and_wrong_ones_are_refused() {
    let good = vec![
        json!({"type": "input_text", "text": "look"}),
        json!({"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_B64}"), "detail": "auto"}),
        json!({"type": "input_image", "image_url": "https://x/a.png", "detail": "auto"}),
        json!({"type": "input_file", "filename": "a.pdf", "file_data": format!("data:application/pdf;base64,{PDF_B64}")}),
    ];
    check_responses_content(&good, "input[0].content").unwrap();
    let cases = [
        (
            json!({"type": "image_url", "image_url": {"url": "https://x"}}),
            "Invalid value: 'image_url'",
        ),
        (
            json!({"type": "input_image", "image_url": "https://x/a.png"}),
            "detail",
        ),
        (
            json!({"type": "input_image", "image_url": {"url": "https://x/a.png"}, "detail": "auto"}),
            "expected a string",
        ),
        (
            json!({"type": "input_image", "detail": "auto"}),
            "image_url",
        ),
        (
            json!({"type": "input_file", "file_data": format!("data:application/pdf;base64,{PDF_B64}")}),
            "filename",
        ),
        (
            json!({"type": "input_file", "filename": "a.pdf", "file_data": format!("data:image/png;base64,{PNG_B64}")}),
            "PDF",
        ),
        (
            json!({"type": "text", "text": "x"}),
            "Invalid value: 'text'",
        ),
    ];
    for (part, expected) in cases {
        let error =
            check_responses_content(std::slice::from_ref(&part), "input[0].content").unwrap_err();
        assert!(error.contains(expected), "{part}: {error}");
    }
}

#[test]
fn anthropic_blocks_pass_and_wrong_ones_are_refused() {
    let good = [
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}),
        json!({"type": "image", "source": {"type": "url", "url": "https://x/a.png"}}),
        json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF_B64}, "title": "a.pdf"}),
    ];
    for block in &good {
        assert!(check_anthropic_block(block, "messages.0.content.0").unwrap());
    }
    assert!(!check_anthropic_block(&json!({"type": "text", "text": "x"}), "m").unwrap());
    let big = STANDARD.encode(vec![0u8; ANTHROPIC_MAX_IMAGE_BYTES + 1]);
    let cases = [
        (
            json!({"type": "image", "image_url": {"url": "https://x"}}),
            "source: Field required",
        ),
        (
            json!({"type": "image", "source": {"type": "base64", "data": PNG_B64}}),
            "media_type: Field required",
        ),
        (
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": PNG_B64}}),
            "Input should be",
        ),
        (
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png"}}),
            "data: Field required",
        ),
        (
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "!!"}}),
            "not valid base64",
        ),
        (
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": big}}),
            "image exceeds 5 MB maximum",
        ),
        (
            json!({"type": "image", "source": {"type": "url"}}),
            "url: Field required",
        ),
        (
            json!({"type": "image", "source": {"type": "inline", "data": PNG_B64}}),
            "does not match",
        ),
        (
            json!({"type": "document", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}}),
            "'application/pdf'",
        ),
        (
            json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PNG_B64}}),
            "not valid",
        ),
    ];
    for (block, expected) in cases {
        let error = check_anthropic_block(&block, "messages.0.content.0").unwrap_err();
        assert!(error.contains(expected), "{block}: {error}");
    }
}

#[test]
fn gemini_parts_pass_and_wrong_ones_are_refused() {
    let body =
        |part: Value| json!({"contents": [{"role": "user", "parts": [{"text": "x"}, part]}]});
    for good in [
        json!({"inlineData": {"mimeType": "image/png", "data": PNG_B64}}),
        json!({"inline_data": {"mime_type": "application/pdf", "data": PDF_B64}}),
        json!({"fileData": {"fileUri": "https://generativelanguage.googleapis.com/v1beta/files/a"}}),
    ] {
        validate_gemini_parts(&body(good)).unwrap();
    }
    let cases = [
        (
            json!({"image": {"mimeType": "image/png", "data": PNG_B64}}),
            "Unknown name \"image\"",
        ),
        (
            json!({"inlineData": {"data": PNG_B64}}),
            "mime_type is not specified",
        ),
        (
            json!({"inlineData": {"mimeType": "image/png", "data": PNG_B64, "url": "x"}}),
            "Unknown name \"url\"",
        ),
        (
            json!({"inlineData": {"mimeType": "image/gif", "data": PNG_B64}}),
            "Unsupported MIME type: image/gif",
        ),
        (
            json!({"inlineData": {"mimeType": "image/png", "data": "data:image/png;base64,AA"}}),
            "Base64 decoding failed",
        ),
        (json!({"fileData": {"mimeType": "image/png"}}), "file_uri"),
        (
            json!({"text": "a", "inlineData": {"mimeType": "image/png", "data": PNG_B64}}),
            "oneof",
        ),
        (json!({}), "oneof"),
    ];
    for (part, expected) in cases {
        let error = validate_gemini_parts(&body(part.clone())).unwrap_err();
        assert!(error.contains(expected), "{part}: {error}");
    }
}

#[test]
fn ollama_images_are_plain_base64() {
    let good = json!({"messages": [{"role": "user", "content": "x", "images": [PNG_B64]}]});
    validate_ollama_request(&good).unwrap();
    let data_url = json!({"messages": [{"role": "user", "content": "x",
        "images": [format!("data:image/png;base64,{PNG_B64}")]}]});
    assert_eq!(
        validate_ollama_request(&data_url).unwrap_err(),
        "illegal base64 data at input byte 4"
    );
    let object =
        json!({"messages": [{"role": "user", "content": "x", "images": [{"data": PNG_B64}]}]});
    assert!(
        validate_ollama_request(&object)
            .unwrap_err()
            .contains("cannot unmarshal")
    );
    let not_list = json!({"messages": [{"role": "user", "content": "x", "images": PNG_B64}]});
    assert!(
        validate_ollama_request(&not_list)
            .unwrap_err()
            .contains("cannot unmarshal")
    );
}
