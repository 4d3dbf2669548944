//! Labelled values: `key <sep> value` where the key name says the value is secret.
//!
//! The labelled patterns have no literal prefix (the key can start anywhere), so they
//! are not run over the whole text. Instead their literal trigger (a secret word such
//! as `token`, `pass` or `KEY`) is searched for; around each hit the key is delimited
//! by hand and checked word by word (`key_names`). Then, by what follows the key:
//!
//! - a separator (`:`, `=`, `::=`, `var key string =`, …; see `separator`): the value
//!   pattern is run, anchored after the separator, on the rest of the line. A `Cookie:` header gives each cookie's value; an
//!   empty value or a YAML block indicator (`|`, `>-`) takes the more-indented lines
//!   below (`block`);
//! - markup or a name/value pair (`<password>…</password>`, `name="password"
//!   value="…"`, `{"name": "db_password", "value": "…"}`): see `markup`;
//! - prose (`the admin password is …`): see `prose`.

use std::ops::Range;

use regex::{Captures, Regex};

use crate::block::{indented_block, line_start, quoted_continuation};
use crate::code_value::{
    is_chain_receiver, is_code_expression, is_keyword_before_call, repeats_label,
};
use crate::cookie_header::{cookie_values, is_cookie_header};
use crate::key_context::is_not_a_label;
use crate::key_names::{KeyInfo, classify_in_context, classify_key};
use crate::label_literal::quote_ends_label_literal;
use crate::lazy_regex::{LazyRegex, Unavailable};
use crate::markup::markup_value;
use crate::merge::{Candidate, PRIORITY_KEYWORD};
use crate::prose::prose_value;
use crate::prose_value::{is_infinitive, is_prose, is_sentence_start};
use crate::redaction::{Keyword, RedactionKind};
use crate::separator::{is_tight_colon, value_start};
use crate::tuple_target::own_item;
use crate::value_filter::{ValueShape, is_identifier_like, is_non_secret_value};

/// Labelled values: for each trigger hit, walk back to the start of the key it is in
/// and look at what follows the key. Markup, pairs and prose are looked for only when
/// `unseparated` (by one of the two labelled patterns). The value patterns are
/// compiled when a key first needs them; `Err` when one did not compile.
pub(crate) fn collect_labelled(
    text: &str,
    hits: impl Iterator<Item = Range<usize>>,
    anchored: &LazyRegex,
    unseparated: bool,
    out: &mut Vec<Candidate>,
) -> Result<(), Unavailable> {
    let bytes = text.as_bytes();
    let mut done_until = 0;
    // End of the line of the latest hit, found once per line (hits on a long line
    // must not each search for it again).
    let mut line_end = 0;
    for hit in hits {
        if hit.start < done_until {
            continue;
        }
        let is_key_byte = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-');
        let mut key_start = hit.start;
        while key_start > 0 && bytes.get(key_start - 1).is_some_and(is_key_byte) {
            key_start -= 1;
        }
        let mut key_end = hit.end;
        while bytes.get(key_end).is_some_and(is_key_byte) {
            key_end += 1;
        }
        done_until = key_end;
        // Cheap checks before any regex: the flag pattern wants a `--flag`, and the
        // key must label a secret.
        let key = text.get(key_start..key_end).unwrap_or_default();
        if !unseparated && !key.starts_with("--") {
            continue;
        }
        let Some(info) = classify(text, key_start, key) else {
            continue;
        };
        if line_end < hit.end {
            line_end = text
                .get(hit.end..)
                .and_then(|after| after.find('\n'))
                .map_or(text.len(), |i| hit.end + i);
        }
        let mut found = Vec::new();
        if let Some(value_start) = value_start(bytes, key_end, key.starts_with("--"))
            && value_start <= line_end
        {
            separated_values(
                text,
                SeparatedKey {
                    key_start,
                    key_end,
                    value_start,
                    line_end,
                },
                anchored.get()?,
                info,
                &mut found,
            );
        } else if !unseparated {
            continue;
        } else {
            // Their lookups answer `None` for a pattern that did not compile: ask
            // first, so that such a text fails closed rather than passing unseen.
            crate::markup::compile().map_err(|_| Unavailable)?;
            crate::prose::compile().map_err(|_| Unavailable)?;
            if let Some(range) = markup_value(text, key_start, key_end, info) {
                found.push(range);
            } else if !is_infinitive(text, key_start)
                && let Some(range) = prose_value(text, key_end, line_end, info)
            {
                found.push(range);
            }
        }
        for range in found {
            done_until = done_until.max(range.end);
            out.push(Candidate {
                range,
                kind: RedactionKind::Keyword(info.keyword),
                priority: PRIORITY_KEYWORD,
            });
        }
    }
    Ok(())
}

/// Where a separated key and its value are.
#[derive(Debug, Clone, Copy)]
struct SeparatedKey {
    key_start: usize,
    key_end: usize,
    /// After the separator and the blanks after it.
    value_start: usize,
    line_end: usize,
}

/// The values of `key <sep> …`: a cookie header's values, the inline value (with its
/// continuation lines), or the indented block below an empty value.
fn separated_values(
    text: &str,
    at: SeparatedKey,
    value: &Regex,
    info: KeyInfo,
    found: &mut Vec<Range<usize>>,
) {
    let key = text.get(at.key_start..at.key_end).unwrap_or_default();
    if is_cookie_header(key) {
        cookie_values(
            text,
            at.key_end,
            at.line_end,
            key.len() > "cookie".len(),
            found,
        );
        return;
    }
    // `user, password = "admin", "S3cret!"`: the key's own item of the right side is
    // read as its value too (the first item, read below as any key's, stays one).
    let assigned = text
        .get(at.key_end..at.value_start)
        .is_some_and(|separator| separator.contains('=') && !separator.contains("=>"));
    if assigned
        && let Some(item) = own_item(
            text,
            line_start(text, at.key_start),
            at.key_start,
            at.value_start,
            at.line_end,
        )
        && item.start != at.value_start
    {
        let at_item = SeparatedKey {
            value_start: item.start,
            line_end: item.end,
            ..at
        };
        inline_values(text, at_item, key, value, info, found);
    }
    inline_values(text, at, key, value, info, found);
}

/// The value of `key <sep> …` (`key` the text at `at`) on its line (with its
/// continuation lines), or the indented block below an empty value.
fn inline_values(
    text: &str,
    at: SeparatedKey,
    key: &str,
    value: &Regex,
    info: KeyInfo,
    found: &mut Vec<Range<usize>>,
) {
    let SeparatedKey {
        key_start,
        key_end,
        value_start,
        line_end,
    } = at;
    let Some(rest) = text.get(value_start..line_end) else {
        return;
    };
    if let Some(caps) = value.captures(rest)
        && !quote_ends_label_literal(text, key_start..key_end, &caps, value_start)
        && let Some((range, _)) = labelled_value_with(
            rest,
            &caps,
            key,
            info,
            is_tight_colon(text.as_bytes(), key_end),
        )
    {
        let range = range.start + value_start..range.end + value_start;
        let quoted = caps.name("uv").is_none();
        // `let secret = provider` / `.load()`: the value is a method's receiver. (The
        // value's own line was read as code by `labelled_value_with`; it sees the line
        // alone, not the line below.)
        if !quoted
            && text
                .get(range.clone())
                .is_some_and(|v| is_chain_receiver(v, text.get(range.end..).unwrap_or_default()))
        {
            return;
        }
        let after = text.get(range.end..line_end).unwrap_or_default();
        if quoted {
            if let Some(next) = quoted_continuation(text, range.end) {
                found.push(next);
            }
        } else if after.trim().is_empty()
            && let Some(block) = indented_block(text, key_start, line_end, false)
            && text
                .get(block.clone())
                .is_some_and(|b| !b.contains([' ', '\t']))
        {
            found.push(range.start..block.end);
            return;
        }
        found.push(range);
        return;
    }
    // Nothing (or only a YAML block indicator) after the separator: the value is on
    // the lines below.
    let after_sep = rest.trim();
    let is_block = matches!(after_sep, "|" | "|-" | "|+" | ">" | ">-" | ">+");
    if (after_sep.is_empty() || is_block)
        && let Some(block) = indented_block(text, key_start, line_end, is_block)
        && let Some(value) = text.get(block.clone())
    {
        let value = value.trim_matches(['"', '\'']);
        let shape = if is_block {
            ValueShape::Quoted
        } else {
            ValueShape::Unquoted { next: None }
        };
        if !is_non_secret_value(value, info, shape) {
            found.push(block);
        }
    }
}

/// The secret value of a `key <sep> value` match, if the key labels a secret and the
/// value is not obviously harmless.
pub(crate) fn labelled_value(text: &str, caps: &Captures<'_>) -> Option<(Range<usize>, Keyword)> {
    let key = caps.name("key")?.as_str();
    let start = caps.name("key")?.start();
    let info = classify(text, start, key)?;
    if quote_ends_label_literal(text, start..start + key.len(), caps, 0) {
        return None;
    }
    let tight = is_tight_colon(text.as_bytes(), caps.name("key")?.end());
    labelled_value_with(text, caps, key, info, tight)
}

/// What the key at `key_start` says about its value: by its own words, else by its
/// context (`?key=`, `API key:`), else as a bare `key` that takes key material.
fn classify(text: &str, key_start: usize, key: &str) -> Option<KeyInfo> {
    if is_not_a_label(text, key_start, key_start + key.len()) {
        return None;
    }
    let own = classify_key(key);
    own.filter(|info| !info.encoded)
        .or_else(|| classify_in_context(text, key_start, key))
        .or(own)
}

fn labelled_value_with(
    text: &str,
    caps: &Captures<'_>,
    key: &str,
    info: KeyInfo,
    tight: bool,
) -> Option<(Range<usize>, Keyword)> {
    let quoted = caps
        .name("dq")
        .or(caps.name("sq"))
        .or(caps.name("eq"))
        .or(caps.name("bq"));
    if let Some(v) = quoted {
        let close = text.as_bytes().get(v.end()).copied();
        let after_close = text.as_bytes().get(v.end() + 1).copied();
        // `"<xsd:element name="Agency…`: a quote followed by a letter did not close a
        // string; and a backtick string with a blank is a command substitution.
        if after_close.is_some_and(|b| b.is_ascii_alphanumeric())
            || (close == Some(b'`') && v.as_str().contains([' ', '\t']))
        {
            return None;
        }
    }
    let (value, shape) = if let Some(v) = quoted {
        (v, ValueShape::Quoted)
    } else {
        let v = caps.name("uv")?;
        if let Some(end) = unbalanced_value_end(text, v.start(), v.end()) {
            // `m{{h}o)p${e]nob(ody…`: brackets that open and close nothing are part
            // of the value, not code or a template.
            let whole = text.get(v.start()..end)?;
            let shape = ValueShape::Unquoted { next: None };
            return (!is_non_secret_value(whole, info, shape))
                .then_some((v.start()..end, info.keyword));
        }
        let next = text.get(v.end()..).and_then(|rest| rest.chars().next());
        (v, ValueShape::Unquoted { next })
    };
    if is_non_secret_value(value.as_str(), info, shape) {
        return None;
    }
    if let Some(end) = spaced_token_end(text, value.end()) {
        // `token: ab12 cd34 ef56 gh78`: a token written in groups.
        return Some((value.start()..end, info.keyword));
    }
    let rest = text.get(value.end()..).unwrap_or_default();
    if matches!(shape, ValueShape::Unquoted { .. })
        && (is_prose(value.as_str(), rest)
            || is_sentence_start(value.as_str(), rest)
            || is_keyword_before_call(value.as_str(), rest)
            || is_code_expression(value.as_str(), rest, info.keyword == Keyword::Password)
            || repeats_label(key, value.as_str()))
    {
        return None;
    }
    if tight && is_identifier_like(value.as_str()) {
        return None;
    }
    let mut range = value.range();
    if matches!(shape, ValueShape::Unquoted { .. }) {
        range.end = extend_over_ampersands(text.as_bytes(), range.end);
    }
    Some((range, info.keyword))
}

/// When a bare value at `start..end` runs into brackets that close the wrong bracket
/// (`m{{h}o)p${e]nob(ody[finds>-_$#thisone}}`), the end of the whole blank-delimited
/// token (without a trailing `,`, `;` or quote). Balanced or still open brackets are
/// code: `get_token()`, `Option<String>`, `HTTPBasicAuth(user, password)`.
fn unbalanced_value_end(text: &str, start: usize, end: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if !matches!(
        bytes.get(end),
        Some(b'{' | b'[' | b'(' | b'<' | b')' | b']' | b'}' | b'>')
    ) {
        return None;
    }
    let mut token_end = end;
    while bytes
        .get(token_end)
        .is_some_and(|b| !b.is_ascii_whitespace())
        && token_end - start < MAX_BRACKETED
    {
        token_end += 1;
    }
    while token_end > end
        && matches!(
            bytes.get(token_end - 1),
            Some(b',' | b';' | b'"' | b'\'' | b'`')
        )
    {
        token_end -= 1;
    }
    let token = bytes.get(start..token_end)?;
    // `$(cat f)`, `${VAR:=$2}`: shell substitutions, not data.
    if token.len() < MIN_BRACKETED || token.first() == Some(&b'$') {
        return None;
    }
    // Closing brackets at the end close something before the value
    // (`(or KEY=AIza...)`): only brackets inside the value count.
    let core_len = token.len()
        - token
            .iter()
            .rev()
            .take_while(|b| matches!(b, b')' | b']' | b'}' | b'>'))
            .count();
    let mut stack = Vec::new();
    let mut previous = 0;
    for &b in token.get(..core_len)? {
        let arrow = b == b'>' && matches!(previous, b'-' | b'=');
        previous = b;
        match b {
            // `$request->password`, `k => v`: an arrow, not a bracket.
            b'>' if arrow => {}
            b'{' | b'[' | b'(' | b'<' => stack.push(b),
            b'}' | b']' | b')' | b'>' => {
                let open = match b {
                    b'}' => b'{',
                    b']' => b'[',
                    b')' => b'(',
                    _ => b'<',
                };
                if stack.pop() != Some(open) {
                    return Some(token_end);
                }
            }
            _ => {}
        }
    }
    // Only brackets left open (`HTTPBasicAuth(user, password)`): a call or a literal
    // that goes on after the blank.
    None
}

/// Shortest bracketed bare value taken whole.
const MIN_BRACKETED: usize = 8;
/// Longest bracketed bare value considered.
const MAX_BRACKETED: usize = 512;

/// After a bare value ending at `end`, more groups of the same token written with
/// blanks between them (`ab12 cd34 ef56 gh78`): the end of the last group. Every group
/// is 3–8 letters and digits with a digit or in capitals, the groups but the last one
/// have one length, there are at least four, and a digit is among them.
fn spaced_token_end(text: &str, end: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let start = bytes
        .get(..end)?
        .iter()
        .rposition(|b| !b.is_ascii_alphanumeric())
        .map_or(0, |i| i + 1);
    let first = end - start;
    if !(3..=8).contains(&first) {
        return None;
    }
    let (mut groups, mut pos, mut last_end, mut digit) = (1, end, end, false);
    digit |= bytes.get(start..end)?.iter().any(u8::is_ascii_digit);
    while bytes.get(pos) == Some(&b' ') {
        let group_start = pos + 1;
        let mut group_end = group_start;
        while bytes.get(group_end).is_some_and(u8::is_ascii_alphanumeric) {
            group_end += 1;
        }
        let len = group_end - group_start;
        let boundary = bytes
            .get(group_end)
            .is_none_or(|b| matches!(b, b' ' | b'\n' | b'\r' | b'"' | b'\'' | b',' | b';'));
        let group = bytes.get(group_start..group_end).unwrap_or_default();
        let tokenish = group.iter().any(u8::is_ascii_digit)
            || group
                .iter()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
        if len == 0
            || len > first
            || !boundary
            || !tokenish
            || (len < first && bytes.get(group_end) == Some(&b' '))
        {
            break;
        }
        digit |= bytes
            .get(group_start..group_end)?
            .iter()
            .any(u8::is_ascii_digit);
        groups += 1;
        last_end = group_end;
        pos = group_end;
        if len < first {
            break;
        }
    }
    (groups >= 4 && digit).then_some(last_end)
}

/// A bare value stops at `&` (the next URL query parameter), but `Tr0ub4dor&3` in a
/// `.env` file is one password: extend over `&…` unless it starts a `name=` pair.
fn extend_over_ampersands(bytes: &[u8], mut end: usize) -> usize {
    let is_value_byte = |b: &u8| !b.is_ascii_whitespace() && !b"\"'`,;&[](){}<>\\".contains(b);
    while bytes.get(end) == Some(&b'&') {
        let mut segment_end = end + 1;
        while bytes.get(segment_end).is_some_and(is_value_byte) {
            segment_end += 1;
        }
        let segment = bytes.get(end + 1..segment_end).unwrap_or_default();
        let name_len = segment
            .iter()
            .take_while(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'[' | b']')
            })
            .count();
        let starts_pair = name_len > 0 && segment.get(name_len) == Some(&b'=');
        if starts_pair {
            break;
        }
        end = segment_end;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unbalanced_brackets_belong_to_the_value() {
        let text = "db_pass: m{{h}o)p${e]nob(ody[finds>-_$#thisone}},";
        let end = unbalanced_value_end(text, 9, 10).unwrap();
        assert_eq!(&text[9..end], "m{{h}o)p${e]nob(ody[finds>-_$#thisone}}");
        assert_eq!(unbalanced_value_end("token = get_token()", 8, 17), None);
        assert_eq!(unbalanced_value_end("token: Option<String>", 7, 13), None);
        assert_eq!(
            unbalanced_value_end("SECRET = $(cat /run/x) &&", 9, 10),
            None
        );
        assert_eq!(unbalanced_value_end("KEY=${KEY:=$2}", 11, 13), None);
        assert_eq!(
            unbalanced_value_end("auth = HTTPBasicAuth(user, password)", 7, 20),
            None
        );
    }

    #[test]
    fn spaced_tokens() {
        let text = "token: ab12 cd34 ef56 gh78 rest";
        assert_eq!(
            spaced_token_end(text, 11).map(|e| &text[7..e]),
            Some("ab12 cd34 ef56 gh78")
        );
        let text = "token: ab12 cd34 ef5";
        assert_eq!(spaced_token_end(text, 11).map(|e| &text[7..e]), None);
        let text = "token: abcd efgh ijkl mnop";
        assert_eq!(spaced_token_end(text, 11), None, "words, no digit");
        let text = "token: AB12 CD34 EF56 GH78 IJ9";
        assert_eq!(
            spaced_token_end(text, 11).map(|e| &text[7..e]),
            Some("AB12 CD34 EF56 GH78 IJ9")
        );
    }

    #[test]
    fn ampersands_inside_values_are_kept() {
        let text = b"a=Tr0ub4dor&3&more rest";
        assert_eq!(extend_over_ampersands(text, 11), 18);
        let query = b"t=abc&fields=id";
        assert_eq!(extend_over_ampersands(query, 5), 5);
        let tail = b"t=abc&";
        assert_eq!(extend_over_ampersands(tail, 5), 6);
    }
}
