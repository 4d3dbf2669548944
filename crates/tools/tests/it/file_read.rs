//! `file_read` through the registry with the default configuration: a 10 MB file
//! comes back as the whole lines that fit the output limit and a marker naming the
//! last line shown and the offset to read on, so the next call continues exactly
//! where the last stopped; Latin-1 text is decoded and binary is refused.

use oxydra_tools::{BuiltinToolsConfig, ToolContext, ToolError, ToolRegistry};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

async fn read(
    registry: &ToolRegistry,
    ctx: &ToolContext,
    args: Value,
) -> Result<String, ToolError> {
    let tool = registry.get("file_read").unwrap();
    tool.execute(args, ctx).await.map(|out| out.content)
}

/// The number after `offset=` in a marker.
fn next_offset(out: &str) -> u64 {
    let at = out.rfind("offset=").unwrap() + "offset=".len();
    out[at..].trim_end_matches(']').parse().unwrap()
}

#[tokio::test]
async fn a_ten_megabyte_file_is_read_on_in_windows_that_agree_with_their_markers() {
    let dir = tempfile::tempdir().unwrap();
    // 200,000 lines of 50 bytes: 10 MB.
    let line = |i: u64| format!("{i:08} {}\n", "x".repeat(40));
    let text: String = (1..=200_000).map(line).collect();
    assert_eq!(text.len(), 10_000_000);
    std::fs::write(dir.path().join("big.log"), &text).unwrap();
    let ctx = ToolContext::new(dir.path(), CancellationToken::new(), "call".into());
    let config = BuiltinToolsConfig::default();
    let registry = ToolRegistry::with_builtins(&config);

    let out = read(&registry, &ctx, json!({"path": "big.log"}))
        .await
        .unwrap();
    // 16 KiB holds 327 whole lines of 50 bytes.
    let shown = (config.output_limit_bytes / 50) as u64;
    assert_eq!(shown, 327);
    let body: String = (1..=shown).map(line).collect();
    assert_eq!(
        out,
        format!(
            "{body}[showed lines 1-{shown} of 200000 (16 KiB limit); read on with offset={}]",
            shown + 1
        )
    );
    // Reading on from the offset given starts at the next line and says so again.
    let next = next_offset(&out);
    let out = read(&registry, &ctx, json!({"path": "big.log", "offset": next}))
        .await
        .unwrap();
    assert!(out.starts_with(&line(next)), "{}", &out[..60]);
    assert!(
        out.ends_with(&format!(
            "[showed lines {next}-{} of 200000 (16 KiB limit); read on with offset={}]",
            next + shown - 1,
            next + shown
        )),
        "{}",
        &out[out.len() - 120..]
    );
    // The tail: no limit reached, the plain window marker.
    let out = read(
        &registry,
        &ctx,
        json!({"path": "big.log", "offset": 199_999}),
    )
    .await
    .unwrap();
    assert_eq!(
        out,
        format!(
            "{}{}[read lines 199999-200000 of 200000; use offset and limit to read other lines]",
            line(199_999),
            line(200_000)
        )
    );
}

#[tokio::test]
async fn latin1_is_decoded_and_binary_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("menu.txt"),
        b"Caf\xe9 cr\xe8me br\xfbl\xe9e\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("a.out"), b"\x7fELF\x02\x01\x01\x00\x00\x00").unwrap();
    std::fs::write(
        dir.path().join("ctl.dat"),
        b"\x01\x02\x03\x04\x05\x06\x10\x11\x12ab\n",
    )
    .unwrap();
    let ctx = ToolContext::new(dir.path(), CancellationToken::new(), "call".into());
    let registry = ToolRegistry::with_builtins(&BuiltinToolsConfig::default());
    let out = read(&registry, &ctx, json!({"path": "menu.txt"}))
        .await
        .unwrap();
    assert_eq!(
        out,
        "Café crème brûlée\n[decoded as Latin-1: not valid UTF-8]"
    );
    for binary in ["a.out", "ctl.dat"] {
        let err = read(&registry, &ctx, json!({"path": binary}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("is a binary file"), "{err}");
    }
}
