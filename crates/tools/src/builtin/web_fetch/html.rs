//! HTML to text in bounded time: html2text for ordinary pages, a linear tag-stripping
//! extraction for pages nested too deeply (or too large) for it.

use super::nesting;

/// Deepest element nesting html2text is given; deeper pages are stripped of their
/// tags instead. Real pages rarely nest past 60 levels.
pub(super) const MAX_NESTING: usize = 128;

/// Largest HTML document html2text is given; larger ones are stripped of their tags.
pub(super) const MAX_HTML_BYTES: usize = 2 * 1024 * 1024;

/// A converted page.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Converted {
    /// The text.
    pub text: String,
    /// Why the page was stripped of its tags rather than rendered, if it was.
    pub plain_because: Option<&'static str>,
}

/// The text of the HTML document `html`, rendered `width` columns wide. Pages nested
/// deeper than [`MAX_NESTING`] or larger than [`MAX_HTML_BYTES`] are reduced to their
/// text by [`strip_tags`]. Runs in time linear in the input for the check and bounded
/// by the two limits for the rendering; call it off the async threads.
pub(super) fn to_text(html: &[u8], width: usize) -> Result<Converted, String> {
    let plain_because = if html.len() > MAX_HTML_BYTES {
        Some("the page is too large to lay out")
    } else if nesting::exceeds(html, MAX_NESTING) {
        Some("the page nests its elements too deeply to lay out")
    } else {
        None
    };
    if plain_because.is_some() {
        return Ok(Converted {
            text: strip_tags(html),
            plain_because,
        });
    }
    let text = html2text::from_read(html, width).map_err(|err| err.to_string())?;
    Ok(Converted {
        text,
        plain_because: None,
    })
}

/// Elements whose content is not text for a reader.
const HIDDEN: &[&[u8]] = &[b"script", b"style", b"head", b"template", b"noscript"];

/// The text of `html` without its markup, in one linear pass: tags, comments and the
/// content of `<script>`, `<style>`, `<head>` and `<template>` are dropped, block tags
/// become line breaks, the common character references are decoded and runs of blank
/// space collapse.
pub(super) fn strip_tags(html: &[u8]) -> String {
    let mut out = Vec::with_capacity(html.len().min(1 << 20));
    let mut at = 0;
    while let Some(offset) = memchr::memchr(b'<', html.get(at..).unwrap_or_default()) {
        push_text(&mut out, html.get(at..at + offset).unwrap_or_default());
        let lt = at + offset;
        let rest = html.get(lt..).unwrap_or_default();
        if rest.starts_with(b"<!--") {
            at = memchr::memmem::find(rest, b"-->").map_or(html.len(), |i| lt + i + 3);
            continue;
        }
        let is_tag = matches!(rest.get(1), Some(c) if c.is_ascii_alphabetic() || matches!(c, b'/' | b'!' | b'?'));
        if !is_tag {
            push_text(&mut out, b"<");
            at = lt + 1;
            continue;
        }
        let close = memchr::memchr(b'>', rest).map_or(html.len(), |i| lt + i + 1);
        let tag = html.get(lt + 1..close).unwrap_or_default();
        let name: Vec<u8> = tag
            .iter()
            .skip_while(|c| **c == b'/')
            .take_while(|c| c.is_ascii_alphanumeric())
            .map(u8::to_ascii_lowercase)
            .collect();
        at = close;
        if !tag.starts_with(b"/") && HIDDEN.contains(&name.as_slice()) {
            at = end_tag(html, close, &name);
            continue;
        }
        if is_block(&name) && !out.ends_with(b"\n") {
            out.push(b'\n');
        }
    }
    push_text(&mut out, html.get(at..).unwrap_or_default());
    tidy(&String::from_utf8_lossy(&out))
}

/// The index after the end tag `</name…>` at or after `from` (the end if none).
fn end_tag(html: &[u8], from: usize, name: &[u8]) -> usize {
    let mut at = from;
    while let Some(i) = memchr::memmem::find(html.get(at..).unwrap_or_default(), b"</") {
        let start = at + i + 2;
        let candidate = html.get(start..start + name.len()).unwrap_or_default();
        if candidate.eq_ignore_ascii_case(name) {
            let rest = html.get(start..).unwrap_or_default();
            return memchr::memchr(b'>', rest).map_or(html.len(), |j| start + j + 1);
        }
        at = start;
    }
    html.len()
}

fn is_block(name: &[u8]) -> bool {
    matches!(
        name,
        b"p" | b"div"
            | b"br"
            | b"li"
            | b"tr"
            | b"table"
            | b"ul"
            | b"ol"
            | b"dl"
            | b"dt"
            | b"dd"
            | b"h1"
            | b"h2"
            | b"h3"
            | b"h4"
            | b"h5"
            | b"h6"
            | b"pre"
            | b"blockquote"
            | b"section"
            | b"article"
            | b"header"
            | b"footer"
            | b"nav"
            | b"main"
            | b"aside"
            | b"hr"
            | b"title"
    )
}

/// Appends `text` with its common character references decoded.
fn push_text(out: &mut Vec<u8>, text: &[u8]) {
    let mut at = 0;
    while let Some(offset) = memchr::memchr(b'&', text.get(at..).unwrap_or_default()) {
        out.extend_from_slice(text.get(at..at + offset).unwrap_or_default());
        let rest = text.get(at + offset..).unwrap_or_default();
        let decoded = [
            (&b"&amp;"[..], &b"&"[..]),
            (b"&lt;", b"<"),
            (b"&gt;", b">"),
            (b"&quot;", b"\""),
            (b"&#39;", b"'"),
            (b"&apos;", b"'"),
            (b"&nbsp;", b" "),
        ]
        .into_iter()
        .find(|(entity, _)| rest.starts_with(entity));
        match decoded {
            Some((entity, replacement)) => {
                out.extend_from_slice(replacement);
                at += offset + entity.len();
            }
            None => {
                out.push(b'&');
                at += offset + 1;
            }
        }
    }
    out.extend_from_slice(text.get(at..).unwrap_or_default());
}

/// Collapses blank space: runs of spaces and tabs become one space, lines are
/// trimmed, and no more than one blank line is kept in a row.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_lines = 0;
    for line in text.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.is_empty() {
            blank_lines += 1;
            if blank_lines > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank_lines = 0;
        }
        out.push_str(&line);
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn ordinary_pages_are_rendered() {
        let converted = to_text(b"<h1>Title</h1><p>Hello <b>world</b></p>", 80).unwrap();
        assert_eq!(converted.plain_because, None);
        assert!(converted.text.contains("Hello"), "{}", converted.text);
        assert!(converted.text.contains("world"), "{}", converted.text);
    }

    #[test]
    fn deep_pages_are_stripped_quickly() {
        let depth = 100_000;
        let html = format!(
            "<html><body>{}deep text{}</body></html>",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        );
        let started = Instant::now();
        let converted = to_text(html.as_bytes(), 120).unwrap();
        let took = started.elapsed();
        assert!(converted.plain_because.is_some());
        assert_eq!(converted.text.trim(), "deep text");
        // Linear work on 1.1 MB: a few milliseconds in release, well under a second
        // in a debug build (html2text took about a minute on this page).
        assert!(took < Duration::from_secs(5), "took {took:?}");
    }

    #[test]
    fn stripping_keeps_text_and_drops_code() {
        let html = b"<html><head><title>T</title><style>p{}</style></head><body>\
            <script>var x = '<p>no</p>';</script><p>One &amp; two</p><!-- c --><div>3 &lt; 4</div>\
            <ul><li>a</li><li>b</li></ul>a < b</body></html>";
        let text = strip_tags(html);
        assert_eq!(text, "One & two\n3 < 4\na\nb\na < b\n");
    }
}
