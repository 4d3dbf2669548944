//! The checks the real APIs apply to content parts (images, PDF documents), for the
//! strict mocks: a wrong field name, a missing media type, bytes that are not base64,
//! a media type the API does not take, an image past its size limit are refused the
//! way the API refuses them (its message, or one of the same kind).
//!
//! - OpenAI chat completions ([`check_openai_content`]): a user message's parts are
//!   `text`, `image_url` (`{url}`: `http(s)` or a `data:image/…;base64,` URL) and
//!   `file` (`{filename, file_data: data URL}` or `{file_id}`); system and tool
//!   messages take `text` parts only.
//! - OpenAI Responses ([`check_responses_content`]): `input_text`, `input_image`
//!   (`image_url` or `file_id`, and `detail`), `input_file` (`filename` with
//!   `file_data`, or `file_id`, or `file_url`), in user messages and in a
//!   `function_call_output`'s `output` list.
//! - Anthropic ([`check_anthropic_block`]): `image` blocks with a `base64` source
//!   (`media_type` one of JPEG, PNG, GIF, WebP; at most 5 MB) or a `url` source;
//!   `document` blocks with a `base64` PDF source; in user content and in a
//!   `tool_result`'s content.
//! - Gemini ([`validate_gemini_parts`]): each part has one known field; `inlineData`
//!   (or `inline_data`) has a `mimeType` it takes and base64 `data`; `fileData` has a
//!   `fileUri`.
//! - Ollama ([`validate_ollama_request`]): `images` is a list of plain base64 strings
//!   (a `data:` URL is not base64 to it).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

/// Anthropic's largest image, in bytes (5 MB).
pub const ANTHROPIC_MAX_IMAGE_BYTES: usize = 5 * 1024 * 1024;

/// Anthropic's most images and documents in one request.
pub const ANTHROPIC_MAX_MEDIA: usize = 100;

/// The image media types Anthropic and OpenAI take.
const WEB_IMAGES: &[&str] = &["image/jpeg", "image/png", "image/gif", "image/webp"];

/// The media types Gemini takes inline.
const GEMINI_INLINE: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/webp",
    "image/heic",
    "image/heif",
    "application/pdf",
];

fn text<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The bytes of base64 `data`, or `None` when it is not base64.
fn decode(data: &str) -> Option<Vec<u8>> {
    STANDARD.decode(data).ok()
}

/// The media type and base64 data of a `data:<type>;base64,<data>` URL.
fn data_url(url: &str) -> Option<(&str, &str)> {
    let (header, data) = url.strip_prefix("data:")?.split_once(',')?;
    Some((header.strip_suffix(";base64")?, data))
}

fn is_http(url: &str) -> bool {
    url.starts_with("https://") || url.starts_with("http://")
}

fn missing(param: &str) -> String {
    format!("Missing required parameter: '{param}'.")
}

/// An image URL as OpenAI checks it: `http(s)`, or a base64 `data:` URL of an image
/// type it takes.
fn check_openai_image_url(url: Option<&Value>, param: &str) -> Result<(), String> {
    let url = match url {
        Some(Value::String(url)) => url,
        Some(other) => {
            return Err(format!(
                "Invalid type for '{param}': expected a string, but got {other} instead."
            ));
        }
        None => return Err(missing(param)),
    };
    if is_http(url) {
        return Ok(());
    }
    match data_url(url) {
        Some((media_type, data)) if WEB_IMAGES.contains(&media_type) => match decode(data) {
            Some(_) => Ok(()),
            None => Err(format!(
                "Invalid '{param}'. Expected a base64-encoded data URL with an image MIME type, but the data is not valid base64."
            )),
        },
        Some((media_type, _)) => Err(format!(
            "Invalid '{param}'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1n'), but got unsupported MIME type '{media_type}'."
        )),
        None => Err(format!(
            "Invalid '{param}'. Expected a valid URL, but got a value with an invalid format."
        )),
    }
}

/// A file's `file_data` as OpenAI checks it: a base64 `data:` URL of a PDF.
fn check_openai_file_data(data: &str, param: &str) -> Result<(), String> {
    match data_url(data) {
        Some(("application/pdf", bytes))
            if decode(bytes).is_some_and(|b| b.starts_with(b"%PDF-")) =>
        {
            Ok(())
        }
        _ => Err(format!(
            "Invalid '{param}'. Expected a base64-encoded data URL of a PDF file ('data:application/pdf;base64,…')."
        )),
    }
}

/// Checks the content of a chat-completions message of `role` that is an array of
/// parts, as OpenAI does; `param` is `messages[i].content`.
pub fn check_openai_content(role: &str, parts: &[Value], param: &str) -> Result<(), String> {
    let user = role == "user";
    for (at, part) in parts.iter().enumerate() {
        let param = format!("{param}[{at}]");
        match text(part, "type") {
            Some("text") => {
                if text(part, "text").is_none() {
                    return Err(missing(&format!("{param}.text")));
                }
            }
            Some("image_url") if user => {
                let image = part
                    .get("image_url")
                    .ok_or_else(|| missing(&format!("{param}.image_url")))?;
                check_openai_image_url(image.get("url"), &format!("{param}.image_url.url"))?;
            }
            Some("file") if user => {
                let file = part
                    .get("file")
                    .ok_or_else(|| missing(&format!("{param}.file")))?;
                match (text(file, "file_data"), text(file, "file_id")) {
                    (Some(data), _) => {
                        check_openai_file_data(data, &format!("{param}.file.file_data"))?;
                        if text(file, "filename").is_none_or(str::is_empty) {
                            return Err(missing(&format!("{param}.file.filename")));
                        }
                    }
                    (None, Some(_)) => {}
                    (None, None) => return Err(missing(&format!("{param}.file.file_data"))),
                }
            }
            Some(other) => {
                let supported = if user {
                    "'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'"
                } else {
                    "'text'"
                };
                return Err(format!(
                    "Invalid value: '{other}'. Supported values are: {supported}. ({param}.type)"
                ));
            }
            None => return Err(missing(&format!("{param}.type"))),
        }
    }
    Ok(())
}

/// Checks the parts of a Responses user message or of a `function_call_output`'s
/// `output` list, as OpenAI does; `param` is where they are (`input[i].content`).
pub fn check_responses_content(parts: &[Value], param: &str) -> Result<(), String> {
    for (at, part) in parts.iter().enumerate() {
        let param = format!("{param}[{at}]");
        match text(part, "type") {
            Some("input_text" | "output_text") => {
                if text(part, "text").is_none() {
                    return Err(missing(&format!("{param}.text")));
                }
            }
            Some("input_image") => {
                if part.get("detail").is_none() {
                    return Err(missing(&format!("{param}.detail")));
                }
                if part.get("file_id").is_none() {
                    check_openai_image_url(part.get("image_url"), &format!("{param}.image_url"))?;
                }
            }
            Some("input_file") => match (
                text(part, "file_data"),
                part.get("file_id").or(part.get("file_url")),
            ) {
                (Some(data), _) => {
                    check_openai_file_data(data, &format!("{param}.file_data"))?;
                    if text(part, "filename").is_none_or(str::is_empty) {
                        return Err(missing(&format!("{param}.filename")));
                    }
                }
                (None, Some(_)) => {}
                (None, None) => return Err(missing(&format!("{param}.file_data"))),
            },
            Some(other) => {
                return Err(format!(
                    "Invalid value: '{other}'. Supported values are: 'input_text', 'input_image', 'output_text', 'refusal', 'input_file', 'computer_screenshot', and 'summary_text'. ({param}.type)"
                ));
            }
            None => return Err(missing(&format!("{param}.type"))),
        }
    }
    Ok(())
}

/// Checks an `image` or `document` block of a Messages request as Anthropic does
/// (other blocks pass); `path` is where it is (`messages.0.content.1`). Returns
/// whether it was an image or a document, to count them.
pub fn check_anthropic_block(block: &Value, path: &str) -> Result<bool, String> {
    let kind = text(block, "type").unwrap_or("");
    if kind != "image" && kind != "document" {
        return Ok(false);
    }
    let source = block
        .get("source")
        .ok_or_else(|| format!("{path}.{kind}.source: Field required"))?;
    match (kind, text(source, "type")) {
        (_, Some("base64")) => {
            let media_type = text(source, "media_type")
                .ok_or_else(|| format!("{path}.{kind}.source.base64.media_type: Field required"))?;
            let allowed: &[&str] = if kind == "image" {
                WEB_IMAGES
            } else {
                &["application/pdf"]
            };
            if !allowed.contains(&media_type) {
                let expected: Vec<String> = allowed.iter().map(|t| format!("'{t}'")).collect();
                return Err(format!(
                    "{path}.{kind}.source.base64.media_type: Input should be {}",
                    expected.join(" or ")
                ));
            }
            let data = text(source, "data")
                .filter(|d| !d.is_empty())
                .ok_or_else(|| format!("{path}.{kind}.source.base64.data: Field required"))?;
            let bytes = decode(data).ok_or_else(|| {
                format!("{path}.{kind}.source.base64.data: The {kind} data is not valid base64")
            })?;
            if kind == "image" && bytes.len() > ANTHROPIC_MAX_IMAGE_BYTES {
                return Err(format!(
                    "{path}.image.source.base64: image exceeds 5 MB maximum: {} bytes > {ANTHROPIC_MAX_IMAGE_BYTES} bytes",
                    bytes.len()
                ));
            }
            if kind == "document" && !bytes.starts_with(b"%PDF-") {
                return Err(format!(
                    "{path}.document.source.base64.data: The PDF specified was not valid."
                ));
            }
        }
        (_, Some("url")) => {
            if !text(source, "url").is_some_and(is_http) {
                return Err(format!("{path}.{kind}.source.url.url: Field required"));
            }
        }
        (_, Some("text" | "content" | "file")) if kind == "document" => {}
        (_, other) => {
            return Err(format!(
                "{path}.{kind}.source: Input tag '{}' found using 'type' does not match any of the expected tags: 'base64', 'url'",
                other.unwrap_or("")
            ));
        }
    }
    Ok(true)
}

/// Checks every part of a Gemini `generateContent` body as the API does.
pub fn validate_gemini_parts(body: &Value) -> Result<(), String> {
    let contents = body
        .get("contents")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (n, content) in contents.iter().enumerate() {
        let parts = content
            .get("parts")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (p, part) in parts.iter().enumerate() {
            let at = format!("contents[{n}].parts[{p}]");
            let Some(fields) = part.as_object() else {
                return Err(format!("Invalid value at '{at}': a part must be an object"));
            };
            let mut data_fields = 0;
            for (name, value) in fields {
                match name.as_str() {
                    "text" | "functionCall" | "function_call" | "functionResponse"
                    | "function_response" => data_fields += 1,
                    "inlineData" | "inline_data" => {
                        data_fields += 1;
                        check_gemini_inline(value, &format!("{at}.inline_data"))?;
                    }
                    "fileData" | "file_data" => {
                        data_fields += 1;
                        if text(value, "fileUri").or(text(value, "file_uri")).is_none() {
                            return Err(format!(
                                "* GenerateContentRequest.{at}.file_data.file_uri: file_uri is not specified"
                            ));
                        }
                    }
                    "thought" | "thoughtSignature" | "thought_signature" => {}
                    other => {
                        return Err(format!(
                            "Invalid JSON payload received. Unknown name \"{other}\" at '{at}': Cannot find field."
                        ));
                    }
                }
            }
            if data_fields != 1 {
                return Err(format!(
                    "* GenerateContentRequest.{at}.data: required oneof field 'data' must have one initialized field"
                ));
            }
        }
    }
    Ok(())
}

fn check_gemini_inline(value: &Value, at: &str) -> Result<(), String> {
    let Some(fields) = value.as_object() else {
        return Err(format!("Invalid value at '{at}': expected an object"));
    };
    if let Some(other) = fields
        .keys()
        .find(|k| !["mimeType", "mime_type", "data"].contains(&k.as_str()))
    {
        return Err(format!(
            "Invalid JSON payload received. Unknown name \"{other}\" at '{at}': Cannot find field."
        ));
    }
    let mime_type = text(value, "mimeType")
        .or(text(value, "mime_type"))
        .ok_or_else(|| {
            format!("* GenerateContentRequest.{at}.mime_type: mime_type is not specified")
        })?;
    if !GEMINI_INLINE.contains(&mime_type) {
        return Err(format!("Unsupported MIME type: {mime_type}"));
    }
    let data = text(value, "data").unwrap_or("");
    if data.is_empty() || decode(data).is_none() {
        return Err(format!(
            "Invalid value at '{at}.data' (TYPE_BYTES), Base64 decoding failed for \"{}\"",
            data.chars().take(20).collect::<String>()
        ));
    }
    Ok(())
}

/// Checks an Ollama `/api/chat` body's images as Ollama does: each message's `images`
/// is a list of base64 strings. The error is Ollama's.
pub fn validate_ollama_request(body: &Value) -> Result<(), String> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("json: cannot unmarshal messages")?;
    for message in messages {
        let Some(images) = message.get("images") else {
            continue;
        };
        let images = images.as_array().ok_or(
            "json: cannot unmarshal into Go struct field Message.messages.images of type []api.ImageData",
        )?;
        for image in images {
            let data = image.as_str().ok_or(
                "json: cannot unmarshal into Go struct field Message.messages.images of type api.ImageData",
            )?;
            if decode(data).is_none() {
                let at = data
                    .bytes()
                    .position(|b| {
                        !(b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=')
                    })
                    .unwrap_or(0);
                return Err(format!("illegal base64 data at input byte {at}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
