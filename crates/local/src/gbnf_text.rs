//! The text of GBNF as llama.cpp's grammar parser reads it: the primitive rules of
//! JSON (the same whitespace rule, numbers, strings and escapes as llama.cpp's own
//! json-schema-to-grammar), string literals, rule names and bounded repeats. The rules a
//! schema asks for are `schema_grammar`'s.

/// Whitespace between tokens: none, a blank, or a line break or two and an indent.
const SPACE: &str = "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}";

/// The primitive rules: name, body, the primitives the body uses.
pub(crate) const PRIMITIVES: &[(&str, &str, &[&str])] = &[
    ("boolean", "\"true\" | \"false\"", &[]),
    ("null", "\"null\"", &[]),
    ("decimal-part", "[0-9]{1,16}", &[]),
    ("integral-part", "[0] | [1-9] [0-9]{0,15}", &[]),
    ("integer", "\"-\"? integral-part", &["integral-part"]),
    (
        "number",
        "\"-\"? integral-part (\".\" decimal-part)? ([eE] [-+]? integral-part)?",
        &["integral-part", "decimal-part"],
    ),
    (
        "char",
        "[^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4})",
        &[],
    ),
    ("string", "\"\\\"\" char* \"\\\"\"", &["char"]),
    (
        "value",
        "object | array | string | number | boolean | null",
        &["object", "array", "string", "number", "boolean", "null"],
    ),
    (
        "object",
        "\"{\" space ( string \":\" space value (\",\" space string \":\" space value)* )? space \"}\"",
        &["space", "string", "value"],
    ),
    (
        "array",
        "\"[\" space ( value (\",\" space value)* )? space \"]\"",
        &["space", "value"],
    ),
    ("space", SPACE, &[]),
    (
        "uuid",
        "\"\\\"\" [0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12} \"\\\"\"",
        &[],
    ),
    (
        "date",
        "[0-9]{4} \"-\" (\"0\" [1-9] | \"1\" [0-2]) \"-\" (\"0\" [1-9] | [1-2] [0-9] | \"3\" [0-1])",
        &[],
    ),
    (
        "time",
        "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{3})? (\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])",
        &[],
    ),
    ("date-time", "date \"T\" time", &["date", "time"]),
    ("date-string", "\"\\\"\" date \"\\\"\"", &["date"]),
    ("time-string", "\"\\\"\" time \"\\\"\"", &["time"]),
    (
        "date-time-string",
        "\"\\\"\" date-time \"\\\"\"",
        &["date-time"],
    ),
];

/// `item` repeated `min` to `max` times (`None`: no upper bound), with `separator`
/// between repeats.
pub(crate) fn repetition(
    item: &str,
    min: u64,
    max: Option<u64>,
    separator: Option<&str>,
) -> String {
    if max == Some(0) {
        return String::new();
    }
    if min == 0 && max == Some(1) {
        return format!("{item}?");
    }
    let Some(separator) = separator else {
        return match (min, max) {
            (0, None) => format!("{item}*"),
            (1, None) => format!("{item}+"),
            (min, None) => format!("{item}{{{min},}}"),
            (min, Some(max)) => format!("{item}{{{min},{max}}}"),
        };
    };
    let rest = repetition(
        &format!("({separator} {item})"),
        min.saturating_sub(1),
        max.map(|max| max - 1),
        None,
    );
    let run = format!("{item} {rest}");
    if min == 0 { format!("({run})?") } else { run }
}

/// `text` as a GBNF string literal.
pub(crate) fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `name` as a rule name: letters, digits and `-` only.
pub(crate) fn rule_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    if cleaned.is_empty() {
        "rule".to_owned()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_written_as_the_parser_reads_them() {
        assert_eq!(repetition("x", 0, None, None), "x*");
        assert_eq!(repetition("x", 1, None, None), "x+");
        assert_eq!(repetition("x", 0, Some(1), None), "x?");
        assert_eq!(repetition("x", 2, Some(3), None), "x{2,3}");
        assert_eq!(repetition("x", 2, None, None), "x{2,}");
        assert_eq!(repetition("x", 0, Some(0), None), "");
        assert_eq!(repetition("x", 0, None, Some("\",\"")), "(x (\",\" x)*)?");
        assert_eq!(
            repetition("x", 2, Some(3), Some("\",\"")),
            "x (\",\" x){1,2}"
        );
    }

    #[test]
    fn literals_and_names_cannot_break_out() {
        assert_eq!(literal("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(literal("\u{1}"), "\"\\x01\"");
        assert_eq!(rule_name("root-a b/\"c"), "root-a-b--c");
        assert_eq!(rule_name(""), "rule");
        // Every primitive a body names is itself a primitive.
        for (_, body, uses) in PRIMITIVES {
            for used in *uses {
                assert!(PRIMITIVES.iter().any(|(name, _, _)| name == used), "{used}");
                assert!(body.contains(used) || *used == "space", "{body}: {used}");
            }
        }
    }
}
