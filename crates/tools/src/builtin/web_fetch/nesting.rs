//! How deeply an HTML document nests its elements, measured in one linear pass.
//!
//! HTML parsers and renderers spend time (and stack) in proportion to how deep the
//! element tree is: a page of 100,000 nested `<div>`s is 1 MB of input that takes
//! html2text about a minute. [`exceeds`] tells such a page apart before any parser
//! sees it, by following the tree builder's rules closely enough that what it counts
//! is never far below the depth the parser builds:
//!
//! - end tags close an element only when the parser would (the nearest open element
//!   of that name, unless a "special" element or a scope boundary comes first);
//! - elements the parser closes implicitly (`<p>`, `<li>`, `<dd>`/`<dt>`, `<option>`,
//!   headings) are closed here too, so ordinary pages with unclosed paragraphs and list
//!   items are not mistaken for deep ones;
//! - table parts (`<tr>`, `<td>`, …) are not counted (each level of table nesting
//!   still counts its `<table>`); `<html>`, `<head>` and `<body>` are not counted;
//! - comments, doctypes and the raw text of `<script>`, `<style>` and the like are
//!   skipped, except inside `<svg>` and `<math>` (where they are parsed as markup);
//! - where the rules above are unsure, the count errs high: a page counted too deep
//!   is only converted more plainly.

/// Elements that never have content.
const VOID: &[&[u8]] = &[
    b"area",
    b"base",
    b"basefont",
    b"bgsound",
    b"br",
    b"col",
    b"embed",
    b"frame",
    b"hr",
    b"img",
    b"image",
    b"input",
    b"keygen",
    b"link",
    b"meta",
    b"param",
    b"source",
    b"track",
    b"wbr",
];

/// Elements whose content the tokenizer reads as text up to their end tag.
const RAW_TEXT: &[&[u8]] = &[
    b"script",
    b"style",
    b"textarea",
    b"title",
    b"xmp",
    b"iframe",
    b"noembed",
    b"noframes",
];

/// Elements that are never pushed: table parts (ignored outside a table, bounded by
/// its `<table>` inside one) and the document's own `<html>`, `<head>`, `<body>`.
const NOT_COUNTED: &[&[u8]] = &[
    b"html",
    b"head",
    b"body",
    b"tbody",
    b"thead",
    b"tfoot",
    b"tr",
    b"td",
    b"th",
    b"caption",
    b"colgroup",
    b"frameset",
];

/// Start tags that close an open `<p>` (in button scope) before they open.
const CLOSES_P: &[&[u8]] = &[
    b"address",
    b"article",
    b"aside",
    b"blockquote",
    b"center",
    b"details",
    b"dialog",
    b"dir",
    b"div",
    b"dl",
    b"fieldset",
    b"figcaption",
    b"figure",
    b"footer",
    b"form",
    b"header",
    b"hgroup",
    b"hr",
    b"main",
    b"menu",
    b"nav",
    b"ol",
    b"p",
    b"pre",
    b"listing",
    b"search",
    b"section",
    b"summary",
    b"table",
    b"ul",
    b"xmp",
    b"h1",
    b"h2",
    b"h3",
    b"h4",
    b"h5",
    b"h6",
    b"li",
    b"dd",
    b"dt",
    b"plaintext",
];

/// Elements an end tag of another (non-special) element cannot close past.
const SPECIAL: &[&[u8]] = &[
    b"address",
    b"applet",
    b"area",
    b"article",
    b"aside",
    b"base",
    b"basefont",
    b"bgsound",
    b"blockquote",
    b"body",
    b"br",
    b"button",
    b"caption",
    b"center",
    b"col",
    b"colgroup",
    b"dd",
    b"details",
    b"dir",
    b"div",
    b"dl",
    b"dt",
    b"embed",
    b"fieldset",
    b"figcaption",
    b"figure",
    b"footer",
    b"form",
    b"frame",
    b"frameset",
    b"h1",
    b"h2",
    b"h3",
    b"h4",
    b"h5",
    b"h6",
    b"head",
    b"header",
    b"hgroup",
    b"hr",
    b"html",
    b"iframe",
    b"img",
    b"input",
    b"keygen",
    b"li",
    b"link",
    b"listing",
    b"main",
    b"marquee",
    b"menu",
    b"meta",
    b"nav",
    b"noembed",
    b"noframes",
    b"noscript",
    b"object",
    b"ol",
    b"p",
    b"param",
    b"plaintext",
    b"pre",
    b"script",
    b"search",
    b"section",
    b"select",
    b"source",
    b"style",
    b"summary",
    b"table",
    b"tbody",
    b"td",
    b"template",
    b"textarea",
    b"tfoot",
    b"th",
    b"thead",
    b"title",
    b"tr",
    b"track",
    b"ul",
    b"wbr",
    b"xmp",
    b"svg",
    b"math",
    b"foreignobject",
    b"desc",
    b"mi",
    b"mo",
    b"mn",
    b"ms",
    b"mtext",
    b"annotation-xml",
];

/// Scope boundaries: an end tag of a special element does not reach past these.
const SCOPE: &[&[u8]] = &[
    b"applet",
    b"caption",
    b"html",
    b"table",
    b"td",
    b"th",
    b"marquee",
    b"object",
    b"template",
    b"svg",
    b"math",
    b"foreignobject",
    b"desc",
    b"mi",
    b"mo",
    b"mn",
    b"ms",
    b"mtext",
    b"annotation-xml",
];

const HEADINGS: &[&[u8]] = &[b"h1", b"h2", b"h3", b"h4", b"h5", b"h6"];

fn is(name: &[u8], set: &[&[u8]]) -> bool {
    set.contains(&name)
}

/// The open elements, as the parser would hold them (approximately, erring deep).
struct Stack {
    open: Vec<Vec<u8>>,
    /// Open `<svg>` / `<math>` elements: foreign content, where raw-text elements and
    /// self-closing tags behave differently.
    foreign: usize,
}

impl Stack {
    fn push(&mut self, name: &[u8]) {
        if name == b"svg" || name == b"math" {
            self.foreign += 1;
        }
        self.open.push(name.to_vec());
    }

    /// Pops everything down to and including the element at `index`.
    fn pop_to(&mut self, index: usize) {
        for name in self.open.drain(index..) {
            if name == b"svg" || name == b"math" {
                self.foreign = self.foreign.saturating_sub(1);
            }
        }
    }

    /// The index of the nearest open element `matches` accepts, looking down from the
    /// top and stopping (with `None`) at an element `stops` accepts.
    fn find(
        &self,
        matches: impl Fn(&[u8]) -> bool,
        stops: impl Fn(&[u8]) -> bool,
    ) -> Option<usize> {
        for (index, name) in self.open.iter().enumerate().rev() {
            if matches(name) {
                return Some(index);
            }
            if stops(name) {
                return None;
            }
        }
        None
    }

    fn close_p_in_button_scope(&mut self) {
        if let Some(index) = self.find(|n| n == b"p", |n| is(n, SCOPE) || n == b"button") {
            self.pop_to(index);
        }
    }

    fn start(&mut self, name: &[u8]) {
        if is(name, NOT_COUNTED) {
            return;
        }
        if self.foreign == 0 && is(name, CLOSES_P) {
            self.close_p_in_button_scope();
        }
        let top = self.open.last().map(Vec::as_slice);
        match name {
            b"li" | b"dd" | b"dt" => {
                let same = |n: &[u8]| {
                    if name == b"li" {
                        n == b"li"
                    } else {
                        n == b"dd" || n == b"dt"
                    }
                };
                let stop = |n: &[u8]| is(n, SPECIAL) && !matches!(n, b"address" | b"div" | b"p");
                if let Some(index) = self.find(same, stop) {
                    self.pop_to(index);
                }
            }
            b"option" | b"optgroup" if top == Some(b"option") => {
                self.open.pop();
            }
            _ if is(name, HEADINGS) && top.is_some_and(|t| is(t, HEADINGS)) => {
                self.open.pop();
            }
            b"a" | b"nobr" => {
                if let Some(index) = self.find(|n| n == name, |n| is(n, SPECIAL)) {
                    self.pop_to(index);
                }
            }
            _ => {}
        }
        self.push(name);
    }

    fn end(&mut self, name: &[u8]) {
        let found = if is(name, SPECIAL) {
            self.find(|n| n == name, |n| is(n, SCOPE))
        } else {
            self.find(|n| n == name, |n| is(n, SPECIAL))
        };
        if let Some(index) = found {
            self.pop_to(index);
        }
    }
}

/// A tag read from the input.
struct Tag<'a> {
    name: &'a [u8],
    end: bool,
    self_closing: bool,
}

/// Reads the tag starting at `input[at]` (a `<`): the tag and the index after it, or
/// `None` when the `<` starts no tag (it is text) — the index to go on from.
fn read_tag(input: &[u8], at: usize) -> (Option<Tag<'_>>, usize) {
    let rest = input.get(at + 1..).unwrap_or_default();
    let (end, name_start) = match rest.first() {
        Some(b'/') => (true, at + 2),
        Some(c) if c.is_ascii_alphabetic() => (false, at + 1),
        Some(b'!') => return (None, skip_markup_declaration(input, at)),
        Some(b'?') => return (None, skip_past(input, at, b">")),
        _ => return (None, at + 1),
    };
    match input.get(name_start) {
        Some(c) if c.is_ascii_alphabetic() => {}
        Some(b'>') if end => return (None, name_start + 1),
        // `</` followed by anything else is a bogus comment up to `>`.
        Some(_) if end => return (None, skip_past(input, name_start, b">")),
        _ => return (None, at + 1),
    }
    let name_end = input
        .get(name_start..)
        .unwrap_or_default()
        .iter()
        .position(|c| c.is_ascii_whitespace() || *c == b'/' || *c == b'>')
        .map_or(input.len(), |offset| name_start + offset);
    let name = input.get(name_start..name_end).unwrap_or_default();
    let (after, self_closing) = skip_attributes(input, name_end);
    (
        Some(Tag {
            name,
            end,
            self_closing,
        }),
        after,
    )
}

/// Skips a tag's attributes from `at`, as the tokenizer reads them (quotes matter
/// only in values). Returns the index after the closing `>` and whether the tag was
/// self-closing (`/>`).
fn skip_attributes(input: &[u8], mut at: usize) -> (usize, bool) {
    let mut slash = false;
    while let Some(&c) = input.get(at) {
        match c {
            b'>' => return (at + 1, slash),
            b'/' => {
                slash = true;
                at += 1;
                continue;
            }
            b'=' => {
                at += 1;
                while input.get(at).is_some_and(u8::is_ascii_whitespace) {
                    at += 1;
                }
                match input.get(at) {
                    Some(&quote @ (b'"' | b'\'')) => {
                        at = memchr::memchr(quote, input.get(at + 1..).unwrap_or_default())
                            .map_or(input.len(), |offset| at + 1 + offset + 1);
                    }
                    _ => {
                        while input
                            .get(at)
                            .is_some_and(|c| !c.is_ascii_whitespace() && *c != b'>')
                        {
                            at += 1;
                        }
                    }
                }
            }
            _ => at += 1,
        }
        slash = false;
    }
    (input.len(), false)
}

/// Skips `<!…`: a comment (`<!-->`, `<!--->`, up to `-->` or `--!>`), or a doctype,
/// CDATA section or bogus comment up to `>`.
fn skip_markup_declaration(input: &[u8], at: usize) -> usize {
    let rest = input.get(at..).unwrap_or_default();
    if !rest.starts_with(b"<!--") {
        return skip_past(input, at, b">");
    }
    let body = at + 4;
    for empty in [&b">"[..], b"->"] {
        if input.get(body..).unwrap_or_default().starts_with(empty) {
            return body + empty.len();
        }
    }
    let close = find(input, body, b"-->").map(|i| i + 3);
    let bang = find(input, body, b"--!>").map(|i| i + 4);
    match (close, bang) {
        (Some(a), Some(b)) => a.min(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => input.len(),
    }
}

/// The index of `needle` in `input` at or after `from`.
fn find(input: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(input.get(from..).unwrap_or_default(), needle).map(|i| from + i)
}

/// The index after the next `needle` at or after `from` (the end when there is none).
fn skip_past(input: &[u8], from: usize, needle: &[u8]) -> usize {
    find(input, from, needle).map_or(input.len(), |i| i + needle.len())
}

/// The index of the end tag `</name` (any case) at or after `from`, or the end.
fn raw_text_end(input: &[u8], from: usize, name: &[u8]) -> usize {
    let mut at = from;
    while let Some(lt) = find(input, at, b"</") {
        let candidate = input.get(lt + 2..lt + 2 + name.len()).unwrap_or_default();
        if candidate.eq_ignore_ascii_case(name) {
            return lt;
        }
        at = lt + 2;
    }
    input.len()
}

/// Whether the elements of `html` nest more than `limit` deep (see the module docs).
/// Linear in the input for any `limit`; stops at the first element past `limit`.
pub(super) fn exceeds(html: &[u8], limit: usize) -> bool {
    let mut stack = Stack {
        open: Vec::new(),
        foreign: 0,
    };
    let mut lowered = Vec::new();
    let mut at = 0;
    while let Some(offset) = memchr::memchr(b'<', html.get(at..).unwrap_or_default()) {
        let (tag, next) = read_tag(html, at + offset);
        at = next;
        let Some(tag) = tag else { continue };
        lowered.clear();
        lowered.extend(tag.name.iter().map(u8::to_ascii_lowercase));
        let name = lowered.as_slice();
        if tag.end {
            stack.end(name);
            continue;
        }
        if name == b"plaintext" && stack.foreign == 0 {
            // Everything after it is text.
            return false;
        }
        if is(name, VOID) || (tag.self_closing && stack.foreign > 0) {
            continue;
        }
        stack.start(name);
        if stack.open.len() > limit {
            return true;
        }
        if stack.foreign == 0 && is(name, RAW_TEXT) {
            at = raw_text_end(html, at, name);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(html: &str) -> usize {
        (0..200)
            .find(|limit| !exceeds(html.as_bytes(), *limit))
            .unwrap()
    }

    #[test]
    fn counts_plain_nesting() {
        assert_eq!(depth("text only"), 0);
        assert_eq!(depth("<div><div><span>x</span></div></div>"), 3);
        assert_eq!(depth(&"<div>".repeat(150)), 150);
        assert_eq!(depth(&"<div></div>".repeat(150)), 1);
        assert_eq!(depth("<html><head></head><body><p>x</p></body></html>"), 1);
    }

    #[test]
    fn implicitly_closed_elements_do_not_add_up() {
        assert_eq!(depth(&"<p>para".repeat(100)), 1);
        assert_eq!(depth(&format!("<ul>{}</ul>", "<li>item".repeat(100))), 2);
        assert_eq!(depth(&format!("<dl>{}</dl>", "<dt>a<dd>b".repeat(100))), 2);
        assert_eq!(depth(&"<p>text<div>block</div>".repeat(100)), 1);
        assert_eq!(
            depth(&format!("<select>{}</select>", "<option>o".repeat(100))),
            2
        );
        assert_eq!(depth(&"<h1>a<h2>b".repeat(100)), 1);
        let table = format!("<table>{}</table>", "<tr><td>a<td>b".repeat(100));
        assert_eq!(depth(&table), 1);
    }

    #[test]
    fn skips_comments_scripts_and_attribute_values() {
        let html = format!(
            "<!-- {} --><script>{}</script><div title=\"<div><div>\" data-x='>'>x</div>",
            "<div>".repeat(100),
            "<div>".repeat(100)
        );
        assert_eq!(depth(&html), 1);
        assert_eq!(depth("<!DOCTYPE html><br/><img src=x><hr>"), 0);
    }

    #[test]
    fn tricks_that_would_hide_nesting_are_counted() {
        // Stray end tags of elements that are not open do not close anything.
        assert_eq!(depth(&"<div></span>".repeat(120)), 120);
        // An end tag does not close past a special element.
        assert_eq!(depth(&"<span><div></span>".repeat(60)), 120);
        // `<div/>` opens a div in HTML.
        assert_eq!(depth(&"<div/>".repeat(120)), 120);
        // Script inside svg is markup, not raw text.
        let svg = format!("<svg><script>{}</script></svg>", "<g>".repeat(120));
        assert!(depth(&svg) > 120);
        // A quote inside an attribute name does not start a value.
        assert_eq!(depth(&"<div a\"b>".repeat(120)), 120);
        // `<!-->` is an empty comment; what follows is markup.
        assert_eq!(depth(&format!("<!-->{}-->", "<div>".repeat(120))), 120);
        // Ruby parts outside `<ruby>` nest.
        assert_eq!(depth(&"<rt>".repeat(120)), 120);
    }
}
