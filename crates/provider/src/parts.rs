//! Content parts (images, PDF documents) on the wire: what each provider takes, its
//! documented limits, and the check that refuses a part before anything is sent.
//!
//! Every client calls [`check`] with its [`PartRules`] before it builds a request: a
//! part the provider cannot carry, of a media type it does not take, or past its
//! documented size or count limit is an error naming the provider and the part, never
//! a part silently left out. The wire modules then map what passed with the helpers
//! here ([`image_source`], [`data_url`]).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use oxydra_types::{ContentPart, Message, MessageRole, PDF_MEDIA_TYPE, sniff_media_type};

use crate::error::ProviderError;

/// One mebibyte: the providers' "MB" limits are enforced in these.
const MIB: usize = 1024 * 1024;

/// Oxydra's own cap on the parts of one request, for providers that document none
/// lower: a request of more parts is almost surely a mistake, and would be tens of
/// megabytes on every turn.
pub const MAX_PARTS_PER_REQUEST: usize = 500;

/// What a provider takes as parts, and its limits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PartRules {
    /// The image media types it takes.
    pub image_media_types: &'static [&'static str],
    /// Whether it fetches an image from an `http(s)` URL itself (otherwise it needs
    /// the bytes; a `data:` URL is always turned into bytes).
    pub remote_image_urls: bool,
    /// The URLs it takes even without `remote_image_urls`: its own file store's
    /// (Gemini's File API).
    pub own_file_urls: &'static [&'static str],
    /// Whether it takes PDF documents.
    pub documents: bool,
    /// Largest image, in bytes.
    pub max_image_bytes: usize,
    /// Largest document, in bytes.
    pub max_document_bytes: usize,
    /// Most parts in one request (every message's parts counted).
    pub max_parts: usize,
    /// Most bytes of parts in one request.
    pub max_total_bytes: usize,
}

const PNG: &str = "image/png";
const JPEG: &str = "image/jpeg";
const GIF: &str = "image/gif";
const WEBP: &str = "image/webp";

/// OpenAI chat completions and Responses: PNG, JPEG, WebP and non-animated GIF; at
/// most 20 MB per image, 500 images and 50 MB of images per request; PDF files of up
/// to 32 MB.
pub(crate) const OPENAI: PartRules = PartRules {
    own_file_urls: &[],
    image_media_types: &[PNG, JPEG, GIF, WEBP],
    remote_image_urls: true,
    documents: true,
    max_image_bytes: 20 * MIB,
    max_document_bytes: 32 * MIB,
    max_parts: 500,
    max_total_bytes: 50 * MIB,
};

/// Anthropic Messages: JPEG, PNG, GIF and WebP of at most 5 MB each, at most 100
/// images per request; PDF documents within the 32 MB request limit.
pub(crate) const ANTHROPIC: PartRules = PartRules {
    own_file_urls: &[],
    image_media_types: &[JPEG, PNG, GIF, WEBP],
    remote_image_urls: true,
    documents: true,
    max_image_bytes: 5 * MIB,
    max_document_bytes: 32 * MIB,
    max_parts: 100,
    max_total_bytes: 32 * MIB,
};

/// Where Gemini's File API keeps uploaded files: the only `https` URLs it takes.
pub(crate) const GEMINI_FILE_API: &str = "https://generativelanguage.googleapis.com/";

/// Gemini: PNG, JPEG, WebP, HEIC and HEIF, and PDF, sent inline within its 20 MB
/// request limit; no web URL (it takes File API URIs only). Parts are capped at
/// [`MAX_PARTS_PER_REQUEST`].
pub(crate) const GEMINI: PartRules = PartRules {
    own_file_urls: &[GEMINI_FILE_API],
    image_media_types: &[PNG, JPEG, WEBP, "image/heic", "image/heif"],
    remote_image_urls: false,
    documents: true,
    max_image_bytes: 20 * MIB,
    max_document_bytes: 20 * MIB,
    max_parts: MAX_PARTS_PER_REQUEST,
    max_total_bytes: 20 * MIB,
};

/// Ollama: base64 images on the message, nothing else. It documents no limit, so
/// Oxydra's own apply: 20 MB per image, [`MAX_PARTS_PER_REQUEST`] parts, 50 MB.
pub(crate) const OLLAMA: PartRules = PartRules {
    own_file_urls: &[],
    image_media_types: &[PNG, JPEG, WEBP],
    remote_image_urls: false,
    documents: false,
    max_image_bytes: 20 * MIB,
    max_document_bytes: 0,
    max_parts: MAX_PARTS_PER_REQUEST,
    max_total_bytes: 50 * MIB,
};

/// An image as the wire wants it: bytes (from the part or a `data:` URL), or a URL
/// the provider fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ImageSource<'a> {
    /// Base64 bytes of `media_type`.
    Bytes {
        /// The media type.
        media_type: &'a str,
        /// The base64 bytes.
        data: &'a str,
    },
    /// An `http(s)` URL.
    Url(&'a str),
}

/// Where an image part's bytes are: its own, those of its `data:` URL, or its
/// `http(s)` URL; `None` for a document or a URL of any other kind.
pub(crate) fn image_source(part: &ContentPart) -> Option<ImageSource<'_>> {
    match part {
        ContentPart::Image { media_type, data } => Some(ImageSource::Bytes { media_type, data }),
        ContentPart::ImageUrl { url } => match parse_data_url(url) {
            Some((media_type, data)) => Some(ImageSource::Bytes { media_type, data }),
            None if is_http_url(url) => Some(ImageSource::Url(url)),
            None => None,
        },
        ContentPart::Document { .. } => None,
    }
}

/// The content of a message with parts as the OpenAI-style APIs take it: a text
/// part of type `text_type` (when the message has text), then each part as
/// `part_to_wire` writes it; `None` for a message without parts (its text goes alone).
pub(crate) fn text_then_parts(
    message: &Message,
    text_type: &str,
    part_to_wire: fn(&ContentPart) -> serde_json::Value,
) -> Option<Vec<serde_json::Value>> {
    if message.parts.is_empty() {
        return None;
    }
    let text = message.text();
    let mut parts = Vec::with_capacity(message.parts.len() + 1);
    if !text.is_empty() {
        parts.push(serde_json::json!({"type": text_type, "text": text}));
    }
    parts.extend(message.parts.iter().map(part_to_wire));
    Some(parts)
}

/// `data` (base64) of `media_type` as a `data:` URL.
pub(crate) fn data_url(media_type: &str, data: &str) -> String {
    format!("data:{media_type};base64,{data}")
}

/// The media type and base64 data of a `data:<type>;base64,<data>` URL.
pub(crate) fn parse_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (header, data) = rest.split_once(',')?;
    let media_type = header.strip_suffix(";base64")?;
    (!media_type.is_empty() && !data.is_empty()).then_some((media_type, data))
}

fn is_http_url(url: &str) -> bool {
    ["https://", "http://"].iter().any(|scheme| {
        url.len() > scheme.len()
            && url
                .get(..scheme.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
    })
}

/// The decoded size of base64 `data`, without decoding it.
fn decoded_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|byte| *byte == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// How many base64 characters are decoded to recognise a file's kind: 48 bytes, more
/// than any signature [`sniff_media_type`] reads (WebP's is 12).
const SNIFF_CHARS: usize = 64;

/// Why `data` is not canonical standard base64 (padded, no whitespace), or `None` when
/// it is. Every character is looked at, without decoding or allocating: a part of
/// tens of megabytes is checked on every turn.
fn base64_problem(data: &str) -> Option<String> {
    let bytes = data.as_bytes();
    if bytes.is_empty() {
        return Some("it has no data".to_owned());
    }
    if !bytes.len().is_multiple_of(4) {
        return Some(format!(
            "its base64 is cut off: {} characters, not a whole number of 4-character groups",
            bytes.len()
        ));
    }
    let padding = bytes.iter().rev().take_while(|byte| **byte == b'=').count();
    if padding > 2 {
        return Some("its base64 has more than two `=` of padding".to_owned());
    }
    let body = bytes.len() - padding;
    if let Some(at) = bytes
        .iter()
        .take(body)
        .position(|byte| !(byte.is_ascii_alphanumeric() || *byte == b'+' || *byte == b'/'))
    {
        let shown = data
            .get(at..)
            .and_then(|rest| rest.chars().next())
            .map_or_else(String::new, |ch| format!(" ({ch:?})"));
        return Some(format!(
            "its base64 has an invalid character{shown} at offset {at}"
        ));
    }
    // The last group decides whether the unused bits are zero, as decoders require.
    let last = data.get(bytes.len() - 4..).unwrap_or(data);
    STANDARD
        .decode(last)
        .err()
        .map(|error| format!("its base64 does not end cleanly: {error}"))
}

/// The first bytes of base64 `data` (enough to recognise a file's kind); `data` has
/// passed [`base64_problem`].
fn leading_bytes(data: &str) -> Vec<u8> {
    let head = data.get(..SNIFF_CHARS).unwrap_or(data);
    // A head cut from valid base64 at a multiple of 4 decodes; a failure would only
    // make the kind unknown, which is refused below.
    STANDARD.decode(head).unwrap_or_default()
}

fn unsupported(provider: &str, part: &ContentPart, reason: impl Into<String>) -> ProviderError {
    ProviderError::UnsupportedPart {
        provider: provider.to_owned(),
        part: part.kind(),
        reason: reason.into(),
    }
}

fn too_large(provider: &str, message: String) -> ProviderError {
    ProviderError::PartLimit {
        provider: provider.to_owned(),
        message,
    }
}

fn megabytes(bytes: usize) -> String {
    format!("{} MB", bytes / MIB)
}

fn bad_bytes(provider: &str, index: usize, part: &ContentPart, reason: String) -> ProviderError {
    ProviderError::BadPartBytes {
        provider: provider.to_owned(),
        index,
        part: part.kind(),
        reason,
    }
}

/// Checks base64 `data` that claims to be `media_type`, part `index` of the request:
/// all of it must be valid base64, and its first bytes those of that kind of file.
fn check_bytes(
    provider: &str,
    index: usize,
    part: &ContentPart,
    media_type: &str,
    data: &str,
) -> Result<(), ProviderError> {
    if let Some(problem) = base64_problem(data) {
        return Err(bad_bytes(provider, index, part, problem));
    }
    match sniff_media_type(&leading_bytes(data)) {
        Some(real) if real == media_type => Ok(()),
        // HEIC/HEIF are not sniffed; their bytes go as they are.
        None if media_type.starts_with("image/hei") => Ok(()),
        real => Err(bad_bytes(
            provider,
            index,
            part,
            format!(
                "it claims to be {media_type} but its bytes are {}",
                real.unwrap_or("not a file of a known kind")
            ),
        )),
    }
}

/// Checks one image (its bytes or URL); returns its size in bytes.
fn check_image(
    provider: &str,
    rules: &PartRules,
    index: usize,
    part: &ContentPart,
) -> Result<usize, ProviderError> {
    let source = image_source(part).ok_or_else(|| {
        unsupported(
            provider,
            part,
            "an image URL must be an http(s) URL or a base64 `data:` URL",
        )
    })?;
    let (media_type, data) = match source {
        ImageSource::Url(url)
            if rules.remote_image_urls
                || rules
                    .own_file_urls
                    .iter()
                    .any(|prefix| url.starts_with(prefix)) =>
        {
            return Ok(0);
        }
        ImageSource::Url(_) => {
            return Err(unsupported(
                provider,
                part,
                "it cannot fetch an image from a web URL; attach the image's bytes instead",
            ));
        }
        ImageSource::Bytes { media_type, data } => (media_type, data),
    };
    if !rules.image_media_types.contains(&media_type) {
        return Err(unsupported(
            provider,
            part,
            format!(
                "it does not take images of type {media_type} (it takes {})",
                rules.image_media_types.join(", ")
            ),
        ));
    }
    check_bytes(provider, index, part, media_type, data)?;
    let size = decoded_len(data);
    if size > rules.max_image_bytes {
        return Err(too_large(
            provider,
            format!(
                "an image of {size} bytes is over its limit of {} per image",
                megabytes(rules.max_image_bytes)
            ),
        ));
    }
    Ok(size)
}

/// Checks one document; returns its size in bytes.
fn check_document(
    provider: &str,
    rules: &PartRules,
    index: usize,
    part: &ContentPart,
    media_type: &str,
    data: &str,
) -> Result<usize, ProviderError> {
    if !rules.documents {
        return Err(unsupported(provider, part, "it takes no documents"));
    }
    if media_type != PDF_MEDIA_TYPE {
        return Err(unsupported(
            provider,
            part,
            format!("it takes PDF documents only, not {media_type}"),
        ));
    }
    check_bytes(provider, index, part, media_type, data)?;
    let size = decoded_len(data);
    if size > rules.max_document_bytes {
        return Err(too_large(
            provider,
            format!(
                "a document of {size} bytes is over its limit of {} per document",
                megabytes(rules.max_document_bytes)
            ),
        ));
    }
    Ok(size)
}

/// Checks every part of `messages` against `rules` before a request is built:
/// parts go on user and tool-result messages only; each must be of a kind and media
/// type `provider` takes, all of its base64 valid and its bytes of the media type it
/// claims, within its size limit, and all of them within its count and total-size
/// limits. The error names `provider` and the part (a bytes error its position too).
pub(crate) fn check(
    provider: &str,
    rules: &PartRules,
    messages: &[Message],
) -> Result<(), ProviderError> {
    let mut count = 0usize;
    let mut total = 0usize;
    // The part being checked, counting from 1 across every message's parts.
    let mut index = 0usize;
    for message in messages {
        let Some(first) = message.parts.first() else {
            continue;
        };
        if matches!(message.role, MessageRole::System | MessageRole::Assistant) {
            return Err(unsupported(
                provider,
                first,
                format!(
                    "only user and tool-result messages carry parts, not {} messages",
                    message.role.as_str()
                ),
            ));
        }
        count = count.saturating_add(message.parts.len());
        if count > rules.max_parts {
            return Err(too_large(
                provider,
                format!(
                    "a request takes at most {} parts (images and documents); this one has more",
                    rules.max_parts
                ),
            ));
        }
        for part in &message.parts {
            index = index.saturating_add(1);
            let size = match part {
                ContentPart::Image { .. } | ContentPart::ImageUrl { .. } => {
                    check_image(provider, rules, index, part)?
                }
                ContentPart::Document {
                    media_type, data, ..
                } => check_document(provider, rules, index, part, media_type, data)?,
            };
            total = total.saturating_add(size);
        }
    }
    if total > rules.max_total_bytes {
        return Err(too_large(
            provider,
            format!(
                "the request's parts add up to {total} bytes, over its limit of {} per request",
                megabytes(rules.max_total_bytes)
            ),
        ));
    }
    Ok(())
}

/// Refuses every part: for a provider that can send none (the local one).
pub fn refuse_all_parts(
    provider: &str,
    reason: &str,
    messages: &[Message],
) -> Result<(), ProviderError> {
    match messages.iter().find_map(|message| message.parts.first()) {
        Some(part) => Err(unsupported(provider, part, reason)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
