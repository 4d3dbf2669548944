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

/// The position, kind and reason of a [`ProviderError::BadPartBytes`].
fn bad_bytes(result: Result<(), ProviderError>) -> (usize, &'static str, String) {
    let Err(error) = result else {
        panic!("accepted");
    };
    let shown = error.to_string();
    match error {
        ProviderError::BadPartBytes {
            index,
            part,
            reason,
            ..
        } => {
            assert!(
                shown.starts_with(&format!("p cannot send part {index} of the request")),
                "{shown}"
            );
            (index, part, reason)
        }
        other => panic!("{other:?}"),
    }
}

fn raw_image(media_type: &str, data: &str) -> ContentPart {
    ContentPart::Image {
        media_type: media_type.into(),
        data: data.into(),
    }
}

#[test]
fn bytes_that_are_not_what_they_claim_are_refused() {
    let fake = user(vec![ContentPart::image("image/png", b"GIF89a not a png")]);
    let (index, part, reason) = bad_bytes(check("p", &OPENAI, &fake));
    assert_eq!((index, part), (1, "image"));
    assert!(reason.contains("image/gif"), "{reason}");
    let text = user(vec![ContentPart::image(
        "image/jpeg",
        b"hello world, no image",
    )]);
    assert!(
        bad_bytes(check("p", &ANTHROPIC, &text))
            .2
            .contains("not a file")
    );
    let not_base64 = user(vec![raw_image("image/png", "!!!! not base64")]);
    assert!(
        bad_bytes(check("p", &OPENAI, &not_base64))
            .2
            .contains("base64")
    );
    let fake_pdf = user(vec![ContentPart::Document {
        media_type: PDF_MEDIA_TYPE.into(),
        data: "iVBORw0KGgo=".into(),
        name: None,
    }]);
    assert_eq!(bad_bytes(check("p", &GEMINI, &fake_pdf)).1, "document");
    let bad_data_url = user(vec![ContentPart::image_url(
        "data:image/png;base64,R0lGODlh",
    )]);
    let (_, part, reason) = bad_bytes(check("p", &OLLAMA, &bad_data_url));
    assert_eq!(part, "image_url");
    assert!(reason.contains("image/gif"), "{reason}");
}

/// A "PNG" that is a text file, whose base64 (of text) is valid.
#[test]
fn a_text_file_named_png_is_refused_for_its_bytes() {
    let readme = b"# Project\n\nThis file is a README, saved as chart.png by mistake.\n";
    let parts = user(vec![ContentPart::image("image/png", readme)]);
    for rules in [OPENAI, ANTHROPIC, GEMINI, OLLAMA] {
        let (index, _, reason) = bad_bytes(check("p", &rules, &parts));
        assert_eq!(index, 1);
        assert!(
            reason.contains("claims to be image/png") && reason.contains("not a file"),
            "{reason}"
        );
    }
}

/// The whole payload is checked, not only the head the kind is read from: a valid
/// PNG head followed by garbage, or cut mid-group, is refused.
#[test]
fn invalid_base64_anywhere_in_the_payload_is_refused() {
    let mut long = PNG.to_vec();
    long.resize(4096, 7);
    let good = ContentPart::image("image/png", &long);
    let data = good.base64_data().unwrap().to_owned();
    check("p", &OPENAI, &user(vec![good.clone()])).unwrap();

    // Truncated: a length that is not a whole number of 4-character groups.
    let cut = &data[..data.len() - 3];
    let reason = bad_bytes(check(
        "p",
        &OPENAI,
        &user(vec![raw_image("image/png", cut)]),
    ))
    .2;
    assert!(reason.contains("cut off"), "{reason}");
    // Truncated at a group boundary still passes the base64 check: a cut PNG is not
    // something the bytes' head can show, and the API reports it.
    let whole_groups = &data[..data.len() - 4 * 10];
    check(
        "p",
        &OPENAI,
        &user(vec![raw_image("image/png", whole_groups)]),
    )
    .unwrap();

    // A bad character far past the sniffed head.
    let mut bytes = data.clone().into_bytes();
    bytes[3000] = b'*';
    let starred = String::from_utf8(bytes).unwrap();
    let reason = bad_bytes(check(
        "p",
        &ANTHROPIC,
        &user(vec![raw_image("image/png", &starred)]),
    ))
    .2;
    assert!(
        reason.contains("'*'") && reason.contains("3000"),
        "{reason}"
    );
    // A line break (MIME-style base64) is not the standard alphabet either.
    let wrapped = format!("{}\n{}", &data[..76], &data[76..data.len() - 1]);
    assert!(
        bad_bytes(check(
            "p",
            &GEMINI,
            &user(vec![raw_image("image/png", &wrapped)])
        ))
        .2
        .contains("invalid character")
    );
    // Padding in the middle, too much padding, non-zero trailing bits.
    let mid_pad = format!("{}=AAA{}", &data[..16], &data[20..]);
    assert!(
        bad_bytes(check(
            "p",
            &OPENAI,
            &user(vec![raw_image("image/png", &mid_pad)])
        ))
        .2
        .contains("invalid character")
    );
    assert!(
        bad_bytes(check(
            "p",
            &OPENAI,
            &user(vec![raw_image("image/png", "iVBORw0KGgoA====")])
        ))
        .2
        .contains("padding")
    );
    // `h` leaves a set bit past the last byte: decoders refuse it.
    let dirty_end = "iVBORw0KGgoAAAANSUhEUh==";
    assert!(
        bad_bytes(check(
            "p",
            &OPENAI,
            &user(vec![raw_image("image/png", dirty_end)])
        ))
        .2
        .contains("does not end cleanly")
    );
    assert!(
        bad_bytes(check("p", &OPENAI, &user(vec![raw_image("image/png", "")])))
            .2
            .contains("no data")
    );
}

/// A GIF declared as a PNG, and a PNG declared as a GIF, among other parts: the
/// error names the right part by its position across messages.
#[test]
fn a_mislabelled_image_is_named_by_its_position_in_the_request() {
    let gif = b"GIF89a\x01\0\x01\0\x80\0\0\xff\xff\xff";
    let messages = vec![
        Message::user("one").with_parts(vec![
            ContentPart::image("image/png", PNG),
            ContentPart::pdf(b"%PDF-1.7 body", None),
        ]),
        Message::tool_result(CallId::from("c"), "t", "r").with_parts(vec![
            ContentPart::image("image/png", PNG),
            ContentPart::image("image/png", gif),
        ]),
    ];
    let (index, part, reason) = bad_bytes(check("p", &OPENAI, &messages));
    assert_eq!((index, part), (4, "image"));
    assert_eq!(
        reason,
        "it claims to be image/png but its bytes are image/gif"
    );
    let swapped = user(vec![ContentPart::image("image/gif", PNG)]);
    let reason = bad_bytes(check("p", &ANTHROPIC, &swapped)).2;
    assert!(
        reason.contains("claims to be image/gif") && reason.contains("image/png"),
        "{reason}"
    );
    // A WebP's signature ends at byte 12: the decoded head reaches it.
    let webp = b"RIFF\x24\0\0\0WEBPVP8 \0\0\0\0";
    check(
        "p",
        &OPENAI,
        &user(vec![ContentPart::image("image/webp", webp)]),
    )
    .unwrap();
    assert!(
        bad_bytes(check(
            "p",
            &OPENAI,
            &user(vec![ContentPart::image("image/png", webp)])
        ))
        .2
        .contains("image/webp")
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
