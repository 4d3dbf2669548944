//! Generated inputs: never panics, ranges are valid, output is rebuilt from the
//! ranges, and scrubbing is idempotent.

use oxydra_scrubbing::{Scrubbed, scrub};

const FRAGMENTS: &[&str] = &[
    "password",
    "token",
    "api_key",
    "=",
    ": ",
    "\"",
    "'",
    " ",
    "\n",
    "\t",
    "&",
    "\\\"",
    "hunter22",
    "ghp_4f9Kd8sLqX2vNw7ZyT1mR0aB3cE5gH6jP9uQ",
    "Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF",
    "Authorization: Bearer ",
    "https://",
    "user:pw@",
    "host/path",
    "-----BEGIN PRIVATE KEY-----",
    "-----END PRIVATE KEY-----",
    "MIIEvQIBADANBgkq",
    "日本語",
    "é",
    "✓",
    "[REDACTED]",
    "sk-",
    "proj-",
    "AKIA",
    "IOSFODNN7EXAMPLE",
    "eyJhbGciOiJIUzI1NiJ9",
    ".",
    "eyJzdWIiOiIxIn0",
    "max_tokens",
    "1024",
    "--password",
    "-u ",
    "null",
    "$TOKEN",
    "/usr/lib/",
    "e3b0c44298fc1c149afbf4c8996fb924",
];

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn check_invariants(input: &str, out: &Scrubbed<'_>) {
    let mut rebuilt = String::new();
    let mut cursor = 0;
    for redaction in &out.redactions {
        let range = redaction.range.clone();
        assert!(range.start >= cursor && range.start < range.end && range.end <= input.len());
        assert!(input.is_char_boundary(range.start) && input.is_char_boundary(range.end));
        rebuilt.push_str(&input[cursor..range.start]);
        rebuilt.push_str(redaction.kind.replacement());
        cursor = range.end;
    }
    rebuilt.push_str(&input[cursor..]);
    assert_eq!(out.text, rebuilt, "input {input:?}");
}

#[test]
fn generated_inputs_keep_the_invariants() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut not_idempotent = Vec::new();
    let mut leaked = Vec::new();
    for _ in 0..1000 {
        let pieces = 1 + rng.next() % 12;
        let input: String = (0..pieces)
            .map(|_| FRAGMENTS[(rng.next() % FRAGMENTS.len() as u64) as usize])
            .collect();
        let once = scrub(&input);
        check_invariants(&input, &once);
        for secret in [
            "4f9Kd8sLqX2vNw7ZyT1mR0aB3cE5gH6jP9uQ",
            "Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF",
        ] {
            if once.text.contains(secret) {
                leaked.push((input.clone(), once.text.to_string()));
            }
        }
        let twice = scrub(&once.text);
        check_invariants(&once.text, &twice);
        if !twice.is_clean() {
            not_idempotent.push((input.clone(), once.text.to_string(), twice.text.to_string()));
        }
    }
    assert!(leaked.is_empty(), "{:#?}", &leaked[..leaked.len().min(8)]);
    assert!(
        not_idempotent.is_empty(),
        "{:#?}",
        &not_idempotent[..not_idempotent.len().min(8)]
    );
}

#[test]
fn one_long_line_with_many_labelled_values() {
    // Every hit is on the same line; the work per hit must not grow with the line.
    let line = "password=abc1 token=tok2 max_tokens=7 ".repeat(2000);
    let out = scrub(&line);
    assert_eq!(out.redactions.len(), 4_000);
    assert_eq!(
        &out.text[..60],
        "password=[REDACTED] token=[REDACTED] max_tokens=7 password=["
    );
    check_invariants(&line, &out);
}

#[test]
fn one_long_line_of_quoted_values_after_bare_labels() {
    // Whether a quoted value's quote closes a literal its label sits in is read from
    // the label's line before it: that look is bounded, so this stays linear (a scan
    // to the line's start would read 20,000 × 150 KB).
    let line = "token: \"Zx9q1\", other: 1, ".repeat(20_000);
    let out = scrub(&line);
    assert_eq!(out.redactions.len(), 20_000);
    check_invariants(&line, &out);
}

#[test]
fn long_labelled_values_made_of_words_cost_no_more_than_their_length() {
    // A value of name words and stand-ins is cut into words only when short; a long
    // one (here 180 KB under a token's label, once 46 s in a release build) is read
    // like any other value.
    let words = format!("token = \"{}\"\n", "testtoken".repeat(20_000));
    let out = scrub(&words);
    check_invariants(&words, &out);
    let text = format!(
        "password = \"{}\" -field=password {}",
        "a.".repeat(50_000),
        "x".repeat(9)
    );
    check_invariants(&text, &scrub(&text));
}

#[test]
fn long_runs_and_unterminated_blocks() {
    // Runs longer than 512 bytes are data, not keys.
    let blob = "Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF".repeat(40);
    assert!(scrub(&blob).is_clean());
    // Many BEGIN lines without END: each header and body is redacted, nothing panics.
    let text = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN\n".repeat(200);
    let out = scrub(&text);
    assert!(!out.text.contains("MIIEvQIBADAN"));
    check_invariants(&text, &out);
}

#[test]
fn one_long_line_of_markup_and_prose_hits() {
    // Hits without a separator look around the key on its line; on one huge line
    // without `>`, `<` or a line break that look is bounded, so this stays linear.
    for unit in [
        "name=\"password\" ",
        "<password ",
        "the password for ",
        "\"db_password\", ",
        "Cookie ",
        // This round's shapes: a user flag, a credential call, a crypt hash's scheme,
        // a hook URL.
        "-u ops ",
        "login(\"a\", ",
        "$6$",
        "https://hooks.example.com/",
    ] {
        let line = unit.repeat(20_000);
        let out = scrub(&line);
        check_invariants(&line, &out);
    }
}

#[test]
fn disguised_and_odd_case_text_keeps_the_invariants() {
    // Folding (zero-width, homoglyphs, fullwidth) and odd-case keys take a second
    // pass; ranges must still be whole characters of the input and scrubbing stays
    // idempotent, also on long inputs made of nothing else.
    for unit in [
        "раss\u{200B}word=hunter22 ",
        "\u{FEFF}\u{200D}\u{00A0}",
        "ｔｏｋｅｎ：ａｂ１２ｃｄ３４ｅｆ ",
        "tOkEn=ab12cd34ef ",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx4Xq1yVjQ9a3\n----END RSA PRIVATE KEY-----\n",
        "key = \"9b1d3c5e7f2a4b6c8d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e\" ",
        "db_pass: m{{h}o)p${e]nob(ody[finds>-_$#thisone}}, ",
    ] {
        let text = unit.repeat(2_000);
        let out = scrub(&text);
        check_invariants(&text, &out);
        // Every unit but the bare disguise characters holds a secret.
        assert_eq!(out.is_clean(), unit.starts_with('\u{FEFF}'), "{unit:?}");
        assert_eq!(
            scrub(&out.text).text,
            out.text,
            "second pass changed {unit:?}"
        );
    }
}
