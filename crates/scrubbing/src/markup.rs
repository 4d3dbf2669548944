//! Secrets named in markup or by a name/value pair rather than by their own key:
//!
//! - an element named for a secret: `<password>…</password>`, `<apiKey>…</apiKey>`;
//! - a tag whose `name` / `key` attribute names a secret, with the value in its `value`
//!   attribute (in any order) or its contents: `<add key="DbPassword" value="…"/>`,
//!   `<input type="password" name="pwd" value="…">`, `<entry key="password">…</entry>`;
//! - a name/value pair: `{"name": "db_password", "value": "…"}` (also `Name`/`Value`,
//!   `ParameterKey`/`ParameterValue`) and Kubernetes' `- name: DB_PASSWORD` /
//!   `value: …`.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::block::{ahead, line_start};
use crate::key_names::KeyInfo;
use crate::value_filter::{ValueShape, is_non_secret_value};
use crate::value_syntax::VALUE;

/// Fields whose value is the *name* of a setting.
const NAME_FIELDS: &[&str] = &[
    "name",
    "key",
    "parameterkey",
    "parametername",
    "secretname",
    "variable",
    "var",
    "setting",
    "id",
    "property",
];

/// How far after the name a pair's value field is looked for.
const PAIR_WINDOW: usize = 300;

struct Patterns {
    /// A `value="…"` attribute inside a tag.
    attribute: Regex,
    /// A `value` field after a name field: `"value": "…"`, `value: …`.
    field: Regex,
}

static PATTERNS: LazyLock<Result<Patterns, regex::Error>> = LazyLock::new(|| {
    Ok(Patterns {
        attribute: Regex::new(
            r#"(?:^|[\s<])(?i:value)[ \t]*=[ \t]*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)')"#,
        )?,
        field: Regex::new(&format!(
            r#"(?:^|[^A-Za-z])(?i:value|parametervalue|secretvalue)(?:\\?["'])?[ \t]*[:=][ \t]*{VALUE}"#
        ))?,
    })
});

/// Compiles the patterns; an error here makes the built-in patterns unavailable.
pub(crate) fn compile() -> Result<(), String> {
    PATTERNS.as_ref().map(|_| ()).map_err(ToString::to_string)
}

/// The value of a secret named by markup or a name/value pair around the key at
/// `key_start..key_end`.
pub(crate) fn markup_value(
    text: &str,
    key_start: usize,
    key_end: usize,
    info: KeyInfo,
) -> Option<Range<usize>> {
    let patterns = PATTERNS.as_ref().ok()?;
    let bytes = text.as_bytes();
    let before = key_start.checked_sub(1).and_then(|i| bytes.get(i)).copied();
    if before == Some(b'<') {
        return element_value(text, key_start, key_end, info);
    }
    if !after_name_field(bytes, key_start) {
        return match before {
            Some(quote @ (b'"' | b'\'')) if bytes.get(key_end) == Some(&quote) => {
                quoted_pair_value(text, key_end + 1, info)
                    .filter(|value| !is_list_item(text, key_start - 1, value.end + 1))
            }
            _ => None,
        };
    }
    let line_start = line_start(text, key_start);
    let head = text.get(line_start..key_start)?;
    if let Some(open) = head.rfind('<')
        && !head.get(open..)?.contains('>')
    {
        return tag_value(text, line_start + open, key_end, info, &patterns.attribute);
    }
    let window_end = (key_end + PAIR_WINDOW).min(text.len());
    let mut window = text
        .get(key_end..window_end)
        .or_else(|| text.get(key_end..))?;
    for stop in ["}", "]", "\n\n"] {
        if let Some(i) = window.find(stop) {
            window = window.get(..i)?;
        }
    }
    // A YAML list's next item (`- name: …`) belongs to another pair.
    let mut offset = 0;
    for line in window.split_inclusive('\n') {
        if offset > 0 && line.trim_start().starts_with("- ") {
            window = window.get(..offset)?;
            break;
        }
        offset += line.len();
    }
    let caps = patterns.field.captures(window)?;
    let quoted = caps.name("dq").or(caps.name("sq")).or(caps.name("eq"));
    let (value, shape) = match quoted.or(caps.name("bq")) {
        Some(v) => (v, ValueShape::Quoted),
        None => (caps.name("uv")?, ValueShape::Unquoted { next: None }),
    };
    (!is_non_secret_value(value.as_str(), info, shape))
        .then(|| key_end + value.start()..key_end + value.end())
}

/// `['pageSize', 'pageToken', 'view']`: the quoted name opening at `open` follows
/// another item and a comma, and a comma or `]` follows the quoted value closing
/// before `after`, so the two are items of a list of strings, not a name and its value
/// (`define('X', 'v')`, `config.set('db', 'password', 'v')` start or end otherwise).
fn is_list_item(text: &str, open: usize, after: usize) -> bool {
    let before = text
        .get(..open)
        .unwrap_or_default()
        .trim_end_matches([' ', '\t']);
    let rest = text
        .get(after..)
        .unwrap_or_default()
        .trim_start_matches([' ', '\t']);
    before.ends_with(',') && (rest.starts_with(',') || rest.starts_with(']'))
}

/// The fewest characters a generated value (a key's, a token's, not a password's) has
/// in a quoted name/value pair of arguments.
const MIN_PAIR_GENERATED: usize = 8;

/// `define('DB_PASSWORD', 'value')`, `setdefault("api_key", "value")`: a quoted name,
/// a comma and a quoted value (the closing quote of the name is at `after - 1`).
fn quoted_pair_value(text: &str, after: usize, info: KeyInfo) -> Option<Range<usize>> {
    let rest = text.get(after..)?;
    let trimmed = rest.trim_start_matches([' ', '\t']).strip_prefix(',')?;
    let trimmed = trimmed.trim_start_matches([' ', '\t']);
    let quote = trimmed.chars().next().filter(|c| matches!(c, '"' | '\''))?;
    let start = after + (rest.len() - trimmed.len()) + 1;
    let body = text.get(start..)?;
    let len = ahead(body).find([quote, '\n'])?;
    let value = body.get(..len)?;
    // `"db_password", "value": …` is a name/value pair, not `define(name, value)`.
    let after_value = body.get(len + 1..)?.trim_start();
    // Two quoted arguments are a weaker reading than `key = value`: a generated
    // value there must be as long as generated keys are (`Buffer.from("accountKey",
    // "base64")` passes an encoding's name); a password may be short.
    let long_enough =
        info.keyword == crate::redaction::Keyword::Password || value.len() >= MIN_PAIR_GENERATED;
    (body.get(len..)?.starts_with(quote)
        && !after_value.starts_with(':')
        && long_enough
        && !is_non_secret_value(value, info, ValueShape::Quoted))
    .then_some(start..start + len)
}

/// True when the key is the value of a name field: `name="…`, `"Name": "…`, `key: …`.
fn after_name_field(bytes: &[u8], key_start: usize) -> bool {
    let mut pos = key_start;
    let back = |pos: &mut usize, pred: &dyn Fn(u8) -> bool| {
        while *pos > 0 && bytes.get(*pos - 1).is_some_and(|b| pred(*b)) {
            *pos -= 1;
        }
    };
    back(&mut pos, &|b| matches!(b, b'"' | b'\'' | b'\\'));
    back(&mut pos, &|b| matches!(b, b' ' | b'\t'));
    if !matches!(
        pos.checked_sub(1).and_then(|i| bytes.get(i)),
        Some(b':' | b'=')
    ) {
        return false;
    }
    pos -= 1;
    back(&mut pos, &|b| matches!(b, b' ' | b'\t'));
    back(&mut pos, &|b| matches!(b, b'"' | b'\'' | b'\\'));
    let word_end = pos;
    back(&mut pos, &|b| b.is_ascii_alphabetic());
    let word = bytes.get(pos..word_end).unwrap_or_default();
    NAME_FIELDS
        .iter()
        .any(|f| word.eq_ignore_ascii_case(f.as_bytes()))
}

/// `<password>value</password>`: the element's contents.
fn element_value(
    text: &str,
    key_start: usize,
    key_end: usize,
    info: KeyInfo,
) -> Option<Range<usize>> {
    let rest = text.get(key_end..)?;
    let close = ahead(rest).find('>')?;
    if rest.get(..close)?.contains(['\n', '<']) || rest.get(..close)?.ends_with('/') {
        return None;
    }
    contents(
        text,
        key_end + close + 1,
        text.get(key_start..key_end)?,
        info,
    )
}

/// A tag from `open` naming a secret: its `value` attribute, else its contents.
fn tag_value(
    text: &str,
    open: usize,
    key_end: usize,
    info: KeyInfo,
    attribute: &Regex,
) -> Option<Range<usize>> {
    let close = key_end + ahead(text.get(key_end..)?).find('>')?;
    let tag = text.get(open..close)?;
    if let Some(caps) = attribute.captures(tag) {
        let value = caps.name("dq").or(caps.name("sq"))?;
        return (!is_non_secret_value(value.as_str(), info, ValueShape::Quoted))
            .then(|| open + value.start()..open + value.end());
    }
    let void = tag
        .get(..6)
        .is_some_and(|t| t.eq_ignore_ascii_case("<input"));
    if tag.ends_with('/') || void {
        return None;
    }
    contents(text, close + 1, "", info)
}

/// The trimmed text from `start` to the closing tag `</name` that must follow it (so
/// `<token>` in prose is not an element).
fn contents(text: &str, start: usize, name: &str, info: KeyInfo) -> Option<Range<usize>> {
    let (start, name) = value_child(text, start).unwrap_or((start, name));
    let rest = text.get(start..)?;
    let end = ahead(rest).find('<')?;
    let closing = rest.get(end..)?.strip_prefix("</")?;
    if !closing.starts_with(name) {
        return None;
    }
    let raw = rest.get(..end)?;
    let value = raw.trim();
    let lead = raw.len() - raw.trim_start().len();
    (!is_non_secret_value(value, info, ValueShape::Quoted))
        .then(|| start + lead..start + lead + value.len())
}

/// `<Password><Value>…</Value>` (Windows' unattend files), `<setting
/// name="DbPassword"><value>…</value>` (.NET settings): when the contents from
/// `start` open with a `value` element, where its own contents start and its name as
/// written. One level only.
fn value_child(text: &str, start: usize) -> Option<(usize, &str)> {
    let rest = text.get(start..)?;
    let blank = rest.len() - rest.trim_start().len();
    let tag = rest.get(blank..)?;
    let name = tag.get(1..6)?;
    (tag.starts_with('<') && name.eq_ignore_ascii_case("value") && tag.get(6..7) == Some(">"))
        .then_some((start + blank + 7, name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_names::classify_key;

    fn value(text: &str, key: &str) -> Option<String> {
        let start = text.find(key).unwrap();
        let info = classify_key(key).unwrap();
        markup_value(text, start, start + key.len(), info).map(|r| text[r].to_owned())
    }

    #[test]
    fn markup_and_pairs() {
        let v = |t: &str, k: &str| value(t, k).unwrap_or_default();
        assert_eq!(v("<password> s3cr3t! </password>", "password"), "s3cr3t!");
        assert_eq!(
            v(r#"<add key="DbPassword" value="p4ss"/>"#, "DbPassword"),
            "p4ss"
        );
        assert_eq!(
            v(r#"<input value="p4ss" type="password" name="pwd">"#, "pwd"),
            "p4ss"
        );
        assert_eq!(
            v(r#"<entry key="db.password">p4ss</entry>"#, "db.password"),
            "p4ss"
        );
        assert_eq!(
            v(r#"{"name": "db_password", "value": "p4ss"}"#, "db_password"),
            "p4ss"
        );
        assert_eq!(
            v("- name: DB_PASSWORD\n  value: p4ss\n", "DB_PASSWORD"),
            "p4ss"
        );
        assert_eq!(v("define('DB_PASSWORD', 'p4ss');", "DB_PASSWORD"), "p4ss");
        // The value in a `value` element of its own.
        assert_eq!(
            v(
                "<AdministratorPassword><Value>Adm1n!x</Value></AdministratorPassword>",
                "AdministratorPassword"
            ),
            "Adm1n!x"
        );
        assert_eq!(
            v(
                "<setting name=\"DbPassword\" serializeAs=\"String\">\n  <value>p4ss</value>\n</setting>",
                "DbPassword"
            ),
            "p4ss"
        );
        assert_eq!(v("<password><value></value></password>", "password"), "");
        assert_eq!(
            v("cfg.set('db', 'password', 'p4ss')", "password"),
            "p4ss",
            "a call's later arguments"
        );
        assert_eq!(
            v(
                r#"os.environ.setdefault("API_KEY", "Zx9qL2mN8v")"#,
                "API_KEY"
            ),
            "Zx9qL2mN8v"
        );
        // A generated value in a pair is as long as generated keys are; an
        // encoding's name is an argument, not a key.
        assert_eq!(
            v(r#"Buffer.from("accountKey", "base64")"#, "accountKey"),
            ""
        );
    }

    #[test]
    fn no_value_no_secret() {
        assert_eq!(
            value(
                r#"<input type="password" name="password" placeholder="Password">"#,
                "password"
            ),
            None
        );
        assert_eq!(
            value(r#"{"name": "db_password"}, {"value": "x1"}"#, "db_password"),
            None
        );
        assert_eq!(value("<password/>", "password"), None);
        assert_eq!(value("title: password", "password"), None);
        assert_eq!(
            value(
                "without `Authorization: Bearer <token>` a `401`.\nfn x() -> Arc<str>",
                "token"
            ),
            None
        );
        assert_eq!(
            value("params=['pageSize', 'pageToken', 'view'],", "pageToken"),
            None,
            "a list of names"
        );
        assert_eq!(
            value(
                "keys = [\"id\", \"api_key\", \"owner\", \"scope\"]",
                "api_key"
            ),
            None
        );
        let k8s = "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef: {}\n  - name: X\n    value: info\n";
        assert_eq!(value(k8s, "DB_PASSWORD"), None);
    }
}
