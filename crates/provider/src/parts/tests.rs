use oxydra_types::CallId;

use super::*;

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

fn user(parts: Vec<ContentPart>) -> Vec<Message> {
    vec![Message::user("look").with_parts(parts)]
}

fn unsupported_kind(result: Result<(), ProviderError>) -> (&'static str, String) {
    match result {
        Err(ProviderError::UnsupportedPart {
            provider,
            part,
            reason,
        }) => {
            assert_eq!(provider, "p");
            (part, reason)
        }
        other => panic!("{other:?}"),
    }
}

fn limit(result: Result<(), ProviderError>) -> String {
    match result {
        Err(error @ ProviderError::PartLimit { .. }) => error.to_string(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn data_urls_are_read_and_written() {
    assert_eq!(
        parse_data_url("data:image/png;base64,AAAA"),
        Some(("image/png", "AAAA"))
    );
    for bad in [
        "data:image/png,AAAA",
        "data:;base64,AAAA",
        "data:image/png;base64,",
        "image/png;base64,AAAA",
        "https://x/a.png",
    ] {
        assert_eq!(parse_data_url(bad), None, "{bad}");
    }
    assert_eq!(data_url("image/png", "AAAA"), "data:image/png;base64,AAAA");
}

#[test]
fn image_sources_are_bytes_or_web_urls() {
    let bytes = ContentPart::image("image/png", PNG);
    assert!(matches!(
        image_source(&bytes),
        Some(ImageSource::Bytes {
            media_type: "image/png",
            ..
        })
    ));
    let data = ContentPart::image_url("data:image/jpeg;base64,/9j/");
    assert_eq!(
        image_source(&data),
        Some(ImageSource::Bytes {
            media_type: "image/jpeg",
            data: "/9j/"
        })
    );
    let web = ContentPart::image_url("HTTPS://example.com/a.png");
    assert_eq!(
        image_source(&web),
        Some(ImageSource::Url("HTTPS://example.com/a.png"))
    );
    for url in [
        "file:///etc/passwd",
        "ftp://x/a.png",
        "https://",
        "",
        "javascript:alert(1)",
    ] {
        assert_eq!(image_source(&ContentPart::image_url(url)), None, "{url}");
    }
    assert_eq!(image_source(&ContentPart::pdf(b"%PDF-", None)), None);
}

#[test]
fn text_only_messages_pass_every_rule() {
    let messages = vec![
        Message::system("s"),
        Message::user("u"),
        Message::tool_result(CallId::from("c"), "t", "r"),
    ];
    for rules in [OPENAI, ANTHROPIC, GEMINI, OLLAMA] {
        check("p", &rules, &messages).unwrap();
    }
    refuse_all_parts("p", "no", &messages).unwrap();
}

#[test]
fn what_each_provider_takes_passes() {
    let good = user(vec![
        ContentPart::image("image/png", PNG),
        ContentPart::image_url("data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=="),
    ]);
    for rules in [OPENAI, ANTHROPIC, GEMINI, OLLAMA] {
        check("p", &rules, &good).unwrap();
    }
    let pdf = user(vec![ContentPart::pdf(
        b"%PDF-1.7 body",
        Some("a.pdf".into()),
    )]);
    for rules in [OPENAI, ANTHROPIC, GEMINI] {
        check("p", &rules, &pdf).unwrap();
    }
    let web = user(vec![ContentPart::image_url("https://example.com/a.png")]);
    check("p", &OPENAI, &web).unwrap();
    check("p", &ANTHROPIC, &web).unwrap();
    let file_api = user(vec![ContentPart::image_url(
        "https://generativelanguage.googleapis.com/v1beta/files/abc",
    )]);
    check("p", &GEMINI, &file_api).unwrap();
}

#[test]
fn parts_a_provider_cannot_send_are_refused_naming_it_and_the_part() {
    let web = user(vec![ContentPart::image_url("https://example.com/a.png")]);
    for rules in [GEMINI, OLLAMA] {
        let (part, reason) = unsupported_kind(check("p", &rules, &web));
        assert_eq!(part, "image_url");
        assert!(reason.contains("URL"), "{reason}");
    }
    let pdf = user(vec![ContentPart::pdf(b"%PDF-1.7", None)]);
    assert_eq!(unsupported_kind(check("p", &OLLAMA, &pdf)).0, "document");
    let bad_scheme = user(vec![ContentPart::image_url("file:///etc/passwd")]);
    assert_eq!(
        unsupported_kind(check("p", &OPENAI, &bad_scheme)).0,
        "image_url"
    );
    let gif = user(vec![ContentPart::image("image/gif", b"GIF89a....")]);
    check("p", &OPENAI, &gif).unwrap();
    let (_, reason) = unsupported_kind(check("p", &GEMINI, &gif));
    assert!(reason.contains("image/gif"), "{reason}");
    let svg = user(vec![ContentPart::image("image/svg+xml", b"<svg/>")]);
    assert!(
        unsupported_kind(check("p", &ANTHROPIC, &svg))
            .1
            .contains("image/svg+xml")
    );
    let word = user(vec![ContentPart::Document {
        media_type: "application/msword".into(),
        data: "AAAA".into(),
        name: None,
    }]);
    assert!(
        unsupported_kind(check("p", &OPENAI, &word))
            .1
            .contains("PDF")
    );
}

#[test]
fn bytes_that_are_not_what_they_claim_are_refused() {
    let fake = user(vec![ContentPart::image("image/png", b"GIF89a not a png")]);
    let (_, reason) = unsupported_kind(check("p", &OPENAI, &fake));
    assert!(reason.contains("image/gif"), "{reason}");
    let text = user(vec![ContentPart::image(
        "image/jpeg",
        b"hello world, no image",
    )]);
    assert!(
        unsupported_kind(check("p", &ANTHROPIC, &text))
            .1
            .contains("not a file")
    );
    let not_base64 = user(vec![ContentPart::Image {
        media_type: "image/png".into(),
        data: "!!!! not base64".into(),
    }]);
    assert!(
        unsupported_kind(check("p", &OPENAI, &not_base64))
            .1
            .contains("base64")
    );
    let fake_pdf = user(vec![ContentPart::Document {
        media_type: PDF_MEDIA_TYPE.into(),
        data: "iVBORw0KGgo=".into(),
        name: None,
    }]);
    assert_eq!(
        unsupported_kind(check("p", &GEMINI, &fake_pdf)).0,
        "document"
    );
    let bad_data_url = user(vec![ContentPart::image_url(
        "data:image/png;base64,R0lGODlh",
    )]);
    assert!(
        unsupported_kind(check("p", &OLLAMA, &bad_data_url))
            .1
            .contains("image/gif")
    );
}

#[test]
fn parts_on_system_or_assistant_messages_are_refused() {
    let image = ContentPart::image("image/png", PNG);
    for message in [
        Message::system("s").with_parts(vec![image.clone()]),
        Message::assistant("a").with_parts(vec![image.clone()]),
    ] {
        let (part, reason) = unsupported_kind(check("p", &OPENAI, &[message]));
        assert_eq!(part, "image");
        assert!(reason.contains("only user and tool-result"), "{reason}");
    }
    let tool = Message::tool_result(CallId::from("c"), "t", "r").with_parts(vec![image]);
    check("p", &OPENAI, &[tool]).unwrap();
}

#[test]
fn sizes_and_counts_past_the_limits_are_refused() {
    let mut big = PNG.to_vec();
    big.resize(5 * MIB + 1, 0);
    let over = user(vec![ContentPart::image("image/png", &big)]);
    let message = limit(check("anthropic", &ANTHROPIC, &over));
    assert!(
        message.contains("anthropic") && message.contains("5 MB"),
        "{message}"
    );
    check("p", &OPENAI, &over).unwrap();
    let mut at_limit = PNG.to_vec();
    at_limit.resize(5 * MIB, 0);
    check(
        "p",
        &ANTHROPIC,
        &user(vec![ContentPart::image("image/png", &at_limit)]),
    )
    .unwrap();

    let many = user(vec![ContentPart::image("image/png", PNG); 1_000]);
    for rules in [OPENAI, ANTHROPIC, GEMINI, OLLAMA] {
        let message = limit(check("p", &rules, &many));
        assert!(message.contains("at most"), "{message}");
    }
    let exactly = user(vec![ContentPart::image("image/png", PNG); 100]);
    check("p", &ANTHROPIC, &exactly).unwrap();
    let one_more = vec![
        exactly[0].clone(),
        Message::tool_result(CallId::from("c"), "t", "r")
            .with_parts(vec![ContentPart::image("image/png", PNG)]),
    ];
    assert!(limit(check("p", &ANTHROPIC, &one_more)).contains("100"));

    let mut five = PNG.to_vec();
    five.resize(5 * MIB, 0);
    let total = user(vec![ContentPart::image("image/png", &five); 5]);
    assert!(limit(check("p", &GEMINI, &total)).contains("20 MB per request"));
}

#[test]
fn refuse_all_names_the_first_part() {
    let messages = vec![
        Message::user("a"),
        Message::user("b").with_parts(vec![ContentPart::pdf(b"%PDF-", None)]),
    ];
    let (part, reason) = unsupported_kind(refuse_all_parts("p", "text only", &messages));
    assert_eq!(part, "document");
    assert_eq!(reason, "text only");
}

#[test]
fn part_refusals_are_neither_retried_nor_a_reason_to_fall_back() {
    let errors = [
        ProviderError::UnsupportedPart {
            provider: "p".into(),
            part: "image",
            reason: "r".into(),
        },
        ProviderError::PartLimit {
            provider: "p".into(),
            message: "m".into(),
        },
    ];
    for error in &errors {
        assert!(!crate::retry_policy::is_retryable(error), "{error}");
        assert!(!crate::fallback::falls_back(error), "{error}");
    }
}
