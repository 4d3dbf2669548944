//! `file_read` of images and PDFs: attached as content parts when their bytes say so
//! (whatever their name), capped in size with an error the model can act on, and
//! refused like any file outside the workspace or protected.

use oxydra_tools::{
    BuiltinToolsConfig, ProtectedKind, ProtectedPaths, ReadConfig, ToolContext, ToolError,
    ToolOutput, builtin_tool,
};
use oxydra_types::ContentPart;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A 1×1 PNG (signature and IHDR chunk, then padding).
fn png() -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0".to_vec();
    bytes.extend_from_slice(&[0x1f, 0x15, 0xc4, 0x89]);
    bytes
}

fn jpeg() -> Vec<u8> {
    let mut bytes = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10];
    bytes.extend_from_slice(b"JFIF\0");
    bytes.extend_from_slice(&[0u8; 64]);
    bytes
}

fn pdf() -> Vec<u8> {
    b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n".to_vec()
}

struct Setup {
    dir: tempfile::TempDir,
    ctx: ToolContext,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(dir.path(), CancellationToken::new(), "call-media".into());
    Setup { dir, ctx }
}

impl Setup {
    fn write(&self, path: &str, bytes: &[u8]) {
        let full = self.dir.path().join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(full, bytes).unwrap();
    }

    async fn read_with(
        &self,
        config: &BuiltinToolsConfig,
        args: Value,
    ) -> Result<ToolOutput, ToolError> {
        builtin_tool("file_read", config)
            .unwrap()
            .execute(args, &self.ctx)
            .await
    }

    async fn read(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.read_with(&BuiltinToolsConfig::default(), args).await
    }
}

#[tokio::test]
async fn an_image_is_attached_with_the_media_type_of_its_bytes() {
    let s = setup();
    s.write("img/dot.png", &png());
    let out = s.read(json!({"path": "img/dot.png"})).await.unwrap();
    assert_eq!(out.parts, vec![ContentPart::image("image/png", &png())]);
    assert_eq!(
        out.content,
        format!(
            "Attached `img/dot.png`: image (image/png, {} B).",
            png().len()
        )
    );
    // The name says nothing: a JPEG called `.txt`, or `.png`, is a JPEG.
    s.write("photo.txt", &jpeg());
    s.write("photo.png", &jpeg());
    for path in ["photo.txt", "photo.png"] {
        let out = s.read(json!({"path": path})).await.unwrap();
        assert_eq!(
            out.parts,
            vec![ContentPart::image("image/jpeg", &jpeg())],
            "{path}"
        );
    }
    // GIF and WebP too.
    s.write("a.gif", b"GIF89a\x01\0\x01\0\0\0\0;");
    s.write("a.webp", b"RIFF\x1a\0\0\0WEBPVP8L\x0d\0\0\0\x2f\0\0\0\0");
    for (path, media) in [("a.gif", "image/gif"), ("a.webp", "image/webp")] {
        let out = s.read(json!({"path": path})).await.unwrap();
        assert_eq!(out.parts.len(), 1, "{path}");
        assert_eq!(out.parts[0].media_type(), Some(media), "{path}");
    }
}

#[tokio::test]
async fn a_pdf_is_attached_as_a_document_named_by_its_file() {
    let s = setup();
    s.write("docs/report.pdf", &pdf());
    let out = s.read(json!({"path": "docs/report.pdf"})).await.unwrap();
    assert_eq!(
        out.parts,
        vec![ContentPart::pdf(&pdf(), Some("report.pdf".into()))]
    );
    assert!(
        out.content
            .starts_with("Attached `docs/report.pdf`: document report.pdf (application/pdf"),
        "{}",
        out.content
    );
    // offset and limit do not cut an attachment; the text says so.
    let out = s
        .read(json!({"path": "docs/report.pdf", "offset": 3, "limit": 1}))
        .await
        .unwrap();
    assert_eq!(out.parts.len(), 1);
    assert!(
        out.content
            .contains("offset and limit apply to text files only"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn a_file_that_only_claims_to_be_an_image_is_read_as_it_is() {
    let s = setup();
    // Text named `.png` is text.
    s.write("fake.png", b"not an image at all\n");
    let out = s.read(json!({"path": "fake.png"})).await.unwrap();
    assert!(out.parts.is_empty());
    assert_eq!(out.content, "not an image at all\n");
    // Binary named `.png` is the binary-file error, never an attachment.
    s.write("noise.png", b"\x89PNX\0\0\0\x01\x02\x03");
    let err = s.read(json!({"path": "noise.png"})).await.unwrap_err();
    assert!(
        err.to_string().contains("`noise.png` is a binary file"),
        "{err}"
    );
    // A PNG signature cut short is not a PNG either: read as today (Latin-1 text).
    s.write("short.png", b"\x89PN");
    let out = s.read(json!({"path": "short.png"})).await.unwrap();
    assert!(out.parts.is_empty());
    assert!(
        out.content.contains("[decoded as Latin-1"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn unsupported_media_types_are_not_attached() {
    let s = setup();
    // SVG is XML text: read as text.
    let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\"><rect/></svg>\n";
    s.write("logo.svg", svg.as_bytes());
    let out = s.read(json!({"path": "logo.svg"})).await.unwrap();
    assert!(out.parts.is_empty());
    assert_eq!(out.content, svg);
    // BMP: binary, refused with the types file_read does attach.
    let mut bmp = b"BM".to_vec();
    bmp.extend_from_slice(&[0x46, 0, 0, 0, 0, 0, 0, 0, 0x36, 0, 0, 0, 0x28, 0, 0, 0]);
    s.write("a.bmp", &bmp);
    let err = s.read(json!({"path": "a.bmp"})).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("binary file"), "{text}");
    assert!(
        text.contains("PNG, JPEG, GIF, WebP") && text.contains("PDF"),
        "{text}"
    );
}

#[tokio::test]
async fn an_oversized_image_is_an_error_naming_the_limit_and_what_to_do() {
    let s = setup();
    let config = BuiltinToolsConfig {
        file_read: ReadConfig {
            max_media_bytes: 1024,
        },
        ..BuiltinToolsConfig::default()
    };
    let mut big = png();
    big.resize(4096, 0);
    s.write("big.png", &big);
    let err = s
        .read_with(&config, json!({"path": "big.png"}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Failed(_)), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("`big.png` is an image (image/png) of 4.0 KiB"),
        "{text}"
    );
    assert!(text.contains("over the 1.0 KiB"), "{text}");
    assert!(text.contains("max_media_bytes"), "{text}");
    assert!(text.contains("smaller copy"), "{text}");
    // Exactly at the cap is fine.
    big.truncate(1024);
    s.write("edge.png", &big);
    let out = s
        .read_with(&config, json!({"path": "edge.png"}))
        .await
        .unwrap();
    assert_eq!(out.parts[0].byte_len(), 1024);
    // The default cap (5 MiB) refuses a 6 MiB PDF.
    let mut huge = pdf();
    huge.resize(6 * 1024 * 1024, b' ');
    s.write("huge.pdf", &huge);
    let err = s.read(json!({"path": "huge.pdf"})).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("is a PDF document (application/pdf) of 6.0 MiB, over the 5.0 MiB"),
        "{err}"
    );
}

#[tokio::test]
async fn attachments_go_through_the_same_workspace_and_protection_checks() {
    let s = setup();
    s.write("inside/dot.png", &png());
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.png"), png()).unwrap();
    let err = s.read(json!({"path": "../secret.png"})).await.unwrap_err();
    assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err:?}");
    let absolute = outside.path().join("secret.png");
    let err = s
        .read(json!({"path": absolute.display().to_string()}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err:?}");
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&absolute, s.dir.path().join("link.png")).unwrap();
        let err = s.read(json!({"path": "link.png"})).await.unwrap_err();
        assert!(matches!(err, ToolError::OutsideWorkspace { .. }), "{err:?}");
    }
    // A protected file is refused even when it is an image.
    let config = BuiltinToolsConfig {
        protected: ProtectedPaths::default()
            .with(ProtectedKind::Database, s.dir.path().join("inside/dot.png")),
        ..BuiltinToolsConfig::default()
    };
    let err = s
        .read_with(&config, json!({"path": "inside/dot.png"}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Protected { .. }), "{err:?}");
}
