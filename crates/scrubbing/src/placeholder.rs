//! Values that stand for a secret without being one: masks (`***`, `xxxx`,
//! `ghp_xxxx…`), template references (`$VAR`, `${VAR}`, `{{ var }}`, `<your-key>`,
//! `%VAR%`) and placeholders made of words (`insert_key_here`, `YOUR_PASSWORD`). The
//! *name* of a secret where its value is expected is `secret_name`'s.

/// How documentation marks a made-up key (`AKIAIOSFODNN7EXAMPLE`,
/// `sfr-73fbd2ce-aa30-494c-8788-1cee4EXAMPLE`): gitleaks allows `.+EXAMPLE$` for the
/// same reason (`rules/gitleaks.rules`).
pub(crate) const DOCUMENTATION_MARK: &str = "EXAMPLE";

/// A run of this many mask characters (`x`, `X`, `*`, `#`, `•`) makes a value a mask.
const MIN_MASK_RUN: usize = 6;

/// Words that say a value stands for a secret rather than being one
/// (`insert_key_here`, `YOUR_PASSWORD`, `a-fake-api-key`, `<your-token>`).
pub(crate) const PLACEHOLDER_WORDS: &[&str] = &[
    "your",
    "yours",
    "insert",
    "here",
    "placeholder",
    "changeme",
    "fake",
    "dummy",
    "example",
    "sample",
    "replace",
    "redacted",
    "todo",
    "fixme",
    "foo",
    "bar",
    "baz",
    "qux",
    "foobar",
    "xxx",
    "abc",
    "xyz",
];

/// True for values that stand for a secret without being one: already redacted
/// text, masks and template placeholders. Used for every kind of labelled secret.
pub(crate) fn is_placeholder(value: &str) -> bool {
    let value = value.trim();
    let mut chars = value.chars();
    let Some(first) = chars.next() else {
        return true;
    };
    if value.starts_with("[REDACTED") {
        return true;
    }
    // A mask: one character repeated (`***`, `xxxx`, `••••`, `aaaaaaaaaaaa`).
    let count = value.chars().count();
    if count >= 3 && chars.all(|c| c == first) {
        return count >= 8 || matches!(first, '*' | 'x' | 'X' | '•' | '.' | '#' | '-' | '?');
    }
    // A value with a run of mask characters: `ghp_xxxxxxxx…`, `AKIAXXXXXXXX…`,
    // `sha256~XXXX_PUT_YOUR_TOKEN_HERE_XXXX`; a format's prefix and one key held
    // down, `sk_live_AAAAAAAA…`.
    if has_mask_run(value) || has_masked_tail(value) || crate::sequence::is_prefixed_repeat(value) {
        return true;
    }
    // A stand-in inside the value: `ghp_<your token>`, `Bearer <TOKEN>`.
    if has_bracketed_words(value) {
        return true;
    }
    // An elided example: `sk-...`, `ghp_…`, `…`.
    let elided = value
        .strip_suffix("...")
        .or_else(|| value.strip_suffix('…'))
        .is_some_and(|head| head.len() <= 10);
    elided
        || is_variable_reference(value)
        || (value.starts_with("{{") && value.ends_with("}}"))
        // Ruby's and CoffeeScript's interpolation: `#{password}`.
        || (value.starts_with("#{") && value.ends_with('}') && !value.contains(' '))
        || (value.starts_with('<') && value.ends_with('>'))
        || (value.starts_with('[')
            && value.ends_with(']')
            && value
                .get(1..value.len() - 1)
                .is_some_and(is_upper_words))
        || (value.starts_with('%') && value.ends_with('%') && value.len() > 2)
        || is_interpolation(value)
        || is_format_template(value)
        || is_wrapped_name(value)
        // A shell command substituted by backticks: `` `etcdctl get /x` ``.
        || (value.starts_with('`') && value.ends_with('`') && value.contains(' '))
}

/// A `<…>` inside the value holding three or more letters, blanks, `_` or `-` and no
/// digit (`<your token>`, `<API_KEY>`): a stand-in for what goes there. A generated
/// value has no `<`; a password's `<ab>` or `<4x>` is not one.
fn has_bracketed_words(value: &str) -> bool {
    let mut rest = value;
    while let Some(open) = rest.find('<') {
        let after = rest.get(open + 1..).unwrap_or_default();
        let Some(close) = after.find('>') else {
            return false;
        };
        let inner = after.get(..close).unwrap_or_default();
        if inner.len() >= 3
            && inner.bytes().any(|b| b.is_ascii_alphabetic())
            && inner
                .bytes()
                .all(|b| b.is_ascii_alphabetic() || matches!(b, b' ' | b'_' | b'-'))
        {
            return true;
        }
        rest = after.get(close + 1..).unwrap_or_default();
    }
    false
}

/// The last piece after a `-`, `_` or `.` is four or more of one mask character:
/// `sk-proj-XXXX`, `key_xxxx`.
fn has_masked_tail(value: &str) -> bool {
    let tail = value.rsplit(['-', '_', '.']).next().unwrap_or_default();
    let mut chars = tail.chars();
    tail.len() >= 4
        && tail.len() < value.len()
        && chars
            .next()
            .is_some_and(|c| matches!(c, 'x' | 'X' | '*' | '#') && chars.all(|d| d == c))
}

/// A value that is wholly a template's interpolation: a sigil, maybe a short
/// function's name, then braces (`#{password}`, `%{hiera('key')}`,
/// `$__env{GF_PASSWORD}`, `$__file{/run/secrets/x}`), or Python's `%(name)s`.
fn is_interpolation(value: &str) -> bool {
    let Some(rest) = value.strip_prefix(['$', '#', '%']) else {
        return false;
    };
    if let Some(named) = rest.strip_prefix('(') {
        // `%(db_password)s`
        return value.starts_with('%')
            && named.split_once(')').is_some_and(|(name, conv)| {
                !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    && conv.len() == 1
                    && conv.bytes().all(|b| b.is_ascii_alphabetic())
            });
    }
    let name_len = rest
        .bytes()
        .take_while(|b| b.is_ascii_alphabetic() || *b == b'_')
        .count();
    name_len <= 8
        && rest.get(name_len..).is_some_and(|braced| {
            braced.starts_with('{') && braced.ends_with('}') && braced.len() > 2
        })
}

/// A format string's template rather than its result: `{relative_name}`, `{0}`, `{}`
/// alone (Python's `str.format`, C#'s, Rust's), or words and one or more printf or
/// brace directives (`Bearer %s`, `token {}`, `%s:%s`). Every piece between blanks,
/// `:`, `/`, `@` and `.` is a word of letters or a directive, so data with a `%` in it
/// (`pa%sw0rd`) is not one.
fn is_format_template(value: &str) -> bool {
    let is_directive = |piece: &str| {
        matches!(piece, "%s" | "%d" | "%r" | "%i" | "{}")
            || piece
                .strip_prefix('{')
                .and_then(|p| p.strip_suffix('}'))
                .is_some_and(|name| {
                    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                })
    };
    let pieces = || value.split([' ', ':', '/', '@', '.']);
    pieces().any(is_directive)
        && pieces().all(|p| {
            is_directive(p) || (!p.is_empty() && p.bytes().all(|b| b.is_ascii_alphabetic()))
        })
}

/// `PASSWORD`, `API_KEY`: capitals and underscores (a bracketed placeholder's name).
fn is_upper_words(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_uppercase() || matches!(b, b'_' | b'-' | b' '))
}

/// A run of [`MIN_MASK_RUN`] mask characters.
fn has_mask_run(value: &str) -> bool {
    let mut run = 0;
    let mut last = '\0';
    for c in value.chars() {
        if matches!(c, 'x' | 'X' | '*' | '#' | '•') {
            run = if c == last { run + 1 } else { 1 };
            if run >= MIN_MASK_RUN {
                return true;
            }
        } else {
            run = 0;
        }
        last = c;
    }
    false
}

/// The words of an identifier-like value (split at non-alphanumerics and camelCase
/// humps), or `None` when it holds a digit or anything but letters and `_-. `.
pub(crate) fn identifier_words(value: &str) -> Option<Vec<String>> {
    if !value
        .bytes()
        .all(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'-' | b'.' | b' '))
    {
        return None;
    }
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in value.chars() {
        if !c.is_ascii_alphabetic() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && previous_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_ascii_lowercase();
        current.push(c.to_ascii_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    Some(words)
}

/// A value made of words, one of them a placeholder word: `insert_key_here`,
/// `YOUR_PASSWORD`, `a-fake-api-key`, `foo`.
pub(crate) fn is_placeholder_words(value: &str) -> bool {
    let value = value.trim_matches(['<', '>', '[', ']', '{', '}', '(', ')']);
    identifier_words(value).is_some_and(|words| {
        words
            .iter()
            .any(|w| PLACEHOLDER_WORDS.contains(&w.as_str()))
    })
}

/// `@@DB_PASSWORD@@`, `#{ApiKey}#`, `@db.password@`, `***REMOVED***`: a name made of
/// words between the same marks on both sides (brackets mirrored), as the token
/// replacement steps of build and release tools write the place a value goes, or as a
/// history rewrite marks one it took out. The mirror and the words make it a name; a
/// generated value is neither.
fn is_wrapped_name(value: &str) -> bool {
    const OPEN: &[char] = &['@', '#', '%', '_', '*', '$', '(', '{', '[', '<'];
    const CLOSE: &[char] = &['@', '#', '%', '_', '*', ')', '}', ']', '>'];
    let inner = value.trim_start_matches(OPEN);
    let name = inner.trim_end_matches(CLOSE);
    let open = value.get(..value.len() - inner.len()).unwrap_or_default();
    let close = inner.get(name.len()..).unwrap_or_default();
    // `$(TOKEN)`, `${TOKEN}`: a sigil before the bracket has no mirror.
    let open = open.strip_prefix('$').unwrap_or(open);
    let mirrored = open.chars().rev().map(|c| match c {
        '(' => ')',
        '{' => '}',
        '[' => ']',
        '<' => '>',
        other => other,
    });
    !open.is_empty()
        && mirrored.eq(close.chars())
        && identifier_words(name).is_some_and(|words| !words.is_empty())
}

/// `$VAR`, `${VAR}`, `${VAR:-default}`, `$(command)`.
fn is_variable_reference(value: &str) -> bool {
    let Some(rest) = value.strip_prefix('$') else {
        return false;
    };
    if rest.starts_with('{') && rest.ends_with('}') || rest.starts_with('(') && rest.ends_with(')')
    {
        return true;
    }
    !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bracketed_stand_in_inside_a_value_makes_it_a_placeholder() {
        for value in [
            "ghp_<your token>",
            "Bearer <TOKEN>",
            "sk-<API_KEY>-x",
            "<a b c>",
        ] {
            assert!(is_placeholder(value), "{value}");
        }
        for value in ["Tr0<ub>4dor", "x<4x>y", "a<b", "p4ss>word<", "<1234>"] {
            assert!(!has_bracketed_words(value), "{value}");
        }
    }

    #[test]
    fn format_templates_are_placeholders() {
        assert!(is_placeholder("{__relative_name__}"));
        assert!(is_placeholder("{0}"));
        assert!(is_placeholder("Bearer %s"));
        assert!(is_placeholder("token {}"));
        assert!(is_placeholder("%s:%s"));
        assert!(!is_placeholder("pa%sw0rd"), "data with a percent sign");
        assert!(!is_placeholder("{Zx9q L2mN}"));
        assert!(!is_placeholder("Bearer Zx9qL2mN8vB4"));
    }

    #[test]
    fn an_ellipsis_alone_is_a_placeholder() {
        assert!(is_placeholder("…"));
        assert!(is_placeholder("sk-…"));
        assert!(!is_placeholder("ab1"));
    }

    #[test]
    fn names_and_placeholder_words() {
        for value in [
            "insert_key_here",
            "YOUR_PASSWORD",
            "<your-token>",
            "a-fake-api-key",
        ] {
            assert!(is_placeholder_words(value), "{value}");
        }
        for value in ["hunter2", "correcthorse", "Summer2024!"] {
            assert!(!is_placeholder_words(value), "{value}");
        }
        assert!(has_mask_run("sha256~XXXXXX_PUT"));
        for value in [
            "sk-proj-XXXX",
            "#{password}",
            "%{hiera('datadog_api_key')}",
            "$__env{GF_PASSWORD}",
            "%(db_password)s",
        ] {
            assert!(is_placeholder(value), "{value}");
        }
        for value in ["ab{cd}", "%(x)", "pa$${s}w", "sk-proj-Zx9q"] {
            assert!(!is_placeholder(value), "{value}");
        }
        assert!(!has_mask_run("xoxb-1234-abcd"));
        for value in [
            "@@DB_PASSWORD@@",
            "#{ApiKey}#",
            "@db.password@",
            "***REMOVED***",
            "__TOKEN__",
            "$(TOKEN)",
        ] {
            assert!(is_wrapped_name(value), "{value}");
        }
        for value in [
            "@@Zx9qL2mN8vB4@@",
            "#{ApiKey}",
            "@@DB_PASSWORD#",
            "*hunter*2",
            "__",
            "@@",
            "_Tr0ub4dor_",
        ] {
            assert!(!is_wrapped_name(value), "{value}");
        }
    }
}
