//! The grammar of a labelled value, as regex source shared by the keyword patterns and
//! the markup patterns: quoted in its several ways, or bare.

/// A value: double-quoted (with escapes), single-quoted, backtick-quoted,
/// escaped-double-quoted (JSON inside a JSON string, once or more) or bare.
pub(crate) const VALUE: &str = r#"(?:"(?P<dq>(?:[^"\\\r\n]|\\.)*)"|'(?P<sq>[^'\r\n]*)'|`(?P<bq>[^`\r\n]*)`|\\+"(?P<eq>(?:[^"\\\r\n]|\\+[^"\\\r\n])*)\\+"|(?P<uv>[^\s"'`,;&\[\](){}<>\\]+))"#;
/// A value after a bare command-line flag (`--password hunter2`): quoted, or bare and
/// not starting with `-` (the next flag).
pub(crate) const BARE_FLAG_VALUE: &str = r#"(?:"(?P<dq>(?:[^"\\\r\n]|\\.)*)"|'(?P<sq>[^'\r\n]*)'|(?P<uv>[^\s"'`,;&\[\](){}<>\\-][^\s"'`,;&\[\](){}<>\\]*))"#;
