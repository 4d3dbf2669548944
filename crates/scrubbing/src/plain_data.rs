//! Values that are data of a kind with a shape of its own — a time, an address, a
//! version, a quantity, a pattern, a schedule, a path into a document — and so no
//! generated credential, whatever label stands before them (`token = "2024-01-01"`,
//! `token_regex = "^[A-Za-z0-9]{32}$"`, `$token-spacing-md: 16px`). A person's
//! password may take any of these shapes, so the value filter asks only under a
//! generated value's label (a token, a key, a secret).

use crate::word_shape::is_dotted_name;

/// Whether `value` is data of one of the shapes below. (A version range, which a
/// password's label asks about too, the value filter asks for on its own:
/// [`is_version_range`].)
pub(crate) fn is_plain_data(value: &str) -> bool {
    is_timestamp(value)
        || is_email(value)
        || is_host_and_port(value)
        || is_drive_path(value)
        || is_version(value)
        || is_quantity(value)
        || is_pattern(value)
        || is_schedule(value)
        || is_indexed_path(value)
        || is_word_list(value)
        || is_digest(value)
}

/// `sha256:e3b0c442…`, `md5:5f4dcc3b…`: a content digest in `algorithm:hex` notation
/// (an image digest, a checksum), the hex as long as the algorithm's output.
fn is_digest(value: &str) -> bool {
    let Some((algorithm, hex)) = value.split_once(':') else {
        return false;
    };
    let bits = match algorithm.to_ascii_lowercase().as_str() {
        "md5" => 128,
        "sha1" => 160,
        "sha224" | "sha512_224" => 224,
        "sha256" | "sha512_256" | "blake3" => 256,
        "sha384" => 384,
        "sha512" | "blake2b" => 512,
        _ => return false,
    };
    hex.len() * 4 == bits && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `read:org,repo`, `openid, profile, email`: a list — two items or more joined by
/// `,` (a blank after it allowed), each lowercase letters with `_`, `-`, `:` or `.`
/// inside, as OAuth scopes and enum values are listed.
fn is_word_list(value: &str) -> bool {
    let mut items = 0;
    for item in value.split(',') {
        let item = item.strip_prefix(' ').unwrap_or(item);
        let word = item.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
            && item
                .bytes()
                .all(|b| b.is_ascii_lowercase() || matches!(b, b'_' | b'-' | b':' | b'.'));
        if !word {
            return false;
        }
        items += 1;
    }
    items >= 2
}

/// `2024-01-01`, `2024-01-01T00:00:00Z`, `2024-01-01 12:30:00.123+02:00`: a date in
/// ISO 8601's order, maybe a time after it.
fn is_timestamp(value: &str) -> bool {
    let bytes = value.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        bytes
            .get(range)
            .is_some_and(|part| part.iter().all(u8::is_ascii_digit))
    };
    let date = bytes.len() >= 10
        && digits(0..4)
        && bytes.get(4) == Some(&b'-')
        && digits(5..7)
        && bytes.get(7) == Some(&b'-')
        && digits(8..10);
    let Some(rest) = value.get(10..) else {
        return false;
    };
    if !date {
        return false;
    }
    let Some(time) = rest.strip_prefix(['T', ' ']) else {
        return rest.is_empty();
    };
    time.len() >= 5
        && time
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b':' | b'.' | b'Z' | b'+' | b'-'))
        && time.get(2..3) == Some(":")
}

/// `admin@example.com`: a mailbox — a local part without `:` or `/`, `@`, and a domain
/// of two labels or more whose last is letters.
fn is_email(value: &str) -> bool {
    let Some((local, domain)) = value.split_once('@') else {
        return false;
    };
    let local_ok = !local.is_empty()
        && local
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-'));
    local_ok && is_domain(domain)
}

/// `example.com`, `db.internal.example.org`: labels of letters, digits and `-` joined
/// by `.`, the last of two letters or more.
fn is_domain(domain: &str) -> bool {
    let labels: Vec<&str> = domain.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
        && labels
            .last()
            .is_some_and(|tld| tld.len() >= 2 && tld.bytes().all(|b| b.is_ascii_alphabetic()))
}

/// `localhost:8080`, `db.example.com:5432`, `10.0.0.1:443`: a host and a port.
fn is_host_and_port(value: &str) -> bool {
    let Some((host, port)) = value.rsplit_once(':') else {
        return false;
    };
    let port_ok = (1..=5).contains(&port.len()) && port.bytes().all(|b| b.is_ascii_digit());
    let ipv4 = host.split('.').count() == 4
        && host
            .split('.')
            .all(|n| (1..=3).contains(&n.len()) && n.bytes().all(|b| b.is_ascii_digit()));
    port_ok && (host == "localhost" || ipv4 || is_domain(host))
}

/// `C:\Users\me\token.txt`, `D:/keys/`, and `C:\\Users\\…` as source code escapes it:
/// a path on a Windows drive.
fn is_drive_path(value: &str) -> bool {
    let bytes = value.as_bytes();
    bytes.first().is_some_and(u8::is_ascii_alphabetic)
        && bytes.get(1) == Some(&b':')
        && matches!(bytes.get(2), Some(b'\\' | b'/'))
}

/// `1.2.3`, `v1.0.0-beta.1`, `2.0.0+build.5`: a version — maybe `v`, then three
/// numbers joined by `.`, maybe a pre-release or build suffix of letters, digits, `.`
/// and `-`.
fn is_version(value: &str) -> bool {
    let value = value.strip_prefix(['v', 'V']).unwrap_or(value);
    let (core, suffix) = match value.find(['-', '+']) {
        Some(at) => value.split_at(at),
        None => (value, ""),
    };
    let numbers: Vec<&str> = core.split('.').collect();
    numbers.len() == 3
        && numbers
            .iter()
            .all(|n| !n.is_empty() && n.len() <= 6 && n.bytes().all(|b| b.is_ascii_digit()))
        && suffix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))
}

/// `^7.1.3`, `~2.0`, `>=1.4.0`: a version constraint — an operator, then numbers joined
/// by `.` (asked under a password's label too: `"minipass": "^7.1.3"`).
pub(crate) fn is_version_range(value: &str) -> bool {
    let numbers = value.trim_start_matches(['^', '~', '>', '<', '=']);
    numbers.len() < value.len()
        && numbers.contains('.')
        && numbers
            .split('.')
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Units a number is written with, without a blank (`16px`, `1h`, `30s`, `512MiB`): of
/// lengths (CSS's), times, and sizes.
const UNITS: &[&str] = &[
    "px", "em", "rem", "vh", "vw", "pt", "pc", "cm", "mm", "in", "%", "ms", "s", "m", "h", "d",
    "w", "y", "min", "kb", "mb", "gb", "tb", "kib", "mib", "gib", "tib", "k",
];

/// Longest word after a number and a blank that reads as its unit (`30 days`).
const MAX_UNIT_WORD: usize = 8;

/// `16px`, `1.5rem`, `100%`, `30s`, `1h`, `30 days`, `2 weeks`: a number and its unit —
/// one of [`UNITS`] right after it, or a lowercase word after a blank.
fn is_quantity(value: &str) -> bool {
    let body = value.strip_prefix('-').unwrap_or(value);
    let number_len = body
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b'.')
        .count();
    let (number, unit) = body.split_at(number_len);
    if number.is_empty() || !number.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
        return false;
    }
    match unit.strip_prefix(' ') {
        Some(word) => {
            (1..=MAX_UNIT_WORD).contains(&word.len())
                && word.bytes().all(|b| b.is_ascii_lowercase())
        }
        None => UNITS.iter().any(|u| unit.eq_ignore_ascii_case(u)),
    }
}

/// `^[A-Za-z0-9_-]{32,}$`, `ghp_[A-Za-z0-9]{36}`, `^sk-.*$`: a regular expression — a
/// bracketed class with a range, or an anchor with a class escape or a wildcard.
fn is_pattern(value: &str) -> bool {
    let class_range = value.find('[').is_some_and(|open| {
        value
            .get(open..)
            .and_then(|rest| rest.find(']').and_then(|close| rest.get(1..close)))
            .is_some_and(|class| class.len() >= 3 && class.as_bytes().get(1) == Some(&b'-'))
    });
    let anchored = value.starts_with('^') || value.ends_with('$');
    let metas = ["\\d", "\\w", "\\s", ".*", ".+", "\\b"];
    class_range || (anchored && metas.iter().any(|m| value.contains(m)))
}

/// `*/5 * * * *`, `0 3 * * 1-5`: a cron schedule — five or six fields of digits, `*`,
/// `/`, `,` and `-`, one of them `*`.
fn is_schedule(value: &str) -> bool {
    let fields: Vec<&str> = value.split(' ').collect();
    (5..=6).contains(&fields.len())
        && fields.iter().all(|field| {
            !field.is_empty()
                && field
                    .bytes()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'*' | b'/' | b',' | b'-' | b'?'))
        })
        && fields.iter().any(|field| field.contains('*'))
}

/// `Jobs[-1].JobId`, `Reservations[0].Instances`: a path into a document (a
/// paginator's JMESPath, a JSON pointer in code) — a dotted name ([`is_dotted_name`])
/// once its numeric subscripts are taken out, with one subscript or more.
fn is_indexed_path(value: &str) -> bool {
    if !value.contains('[') {
        return false;
    }
    let mut path = String::with_capacity(value.len());
    let mut subscripts = 0;
    let mut rest = value;
    while let Some(open) = rest.find('[') {
        let (head, tail) = rest.split_at(open);
        let Some(close) = tail.find(']') else {
            return false;
        };
        let index = tail.get(1..close).unwrap_or_default();
        let digits = index.strip_prefix('-').unwrap_or(index);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
        path.push_str(head);
        subscripts += 1;
        rest = tail.get(close + 1..).unwrap_or_default();
    }
    path.push_str(rest);
    subscripts > 0 && is_dotted_name(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_in_algorithm_hex_notation_are_data() {
        for value in [
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "md5:5f4dcc3b5aa765d61d8327deb882cf99",
            "SHA1:da39a3ee5e6b4b0d3255bfef95601890afd80709",
        ] {
            assert!(is_plain_data(value), "{value}");
        }
        for value in [
            "sha256:e3b0c44298fc",
            "sha256:Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dFZx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF",
            "sha256~e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "key:5f4dcc3b5aa765d61d8327deb882cf99",
        ] {
            assert!(!is_digest(value), "{value}");
        }
    }

    #[test]
    fn data_of_a_known_shape_is_plain() {
        for value in [
            "2024-01-01",
            "2024-01-01T00:00:00Z",
            "2024-01-01 12:30:00.123+02:00",
            "admin@example.com",
            "first.last+tag@mail.example.org",
            "localhost:8080",
            "db.example.com:5432",
            "10.0.0.1:443",
            "C:\\Users\\me\\token.txt",
            "C:\\\\Users\\\\me",
            "D:/keys/",
            "1.2.3",
            "v1.0.0-beta.1",
            "2.0.0+build.5",
            "16px",
            "1.5rem",
            "100%",
            "30s",
            "1h",
            "30 days",
            "-1 day",
            "^[A-Za-z0-9_-]{32,}$",
            "ghp_[A-Za-z0-9]{36}",
            "^sk-.*$",
            "*/5 * * * *",
            "0 3 * * 1-5",
            "Jobs[-1].JobId",
            "read:org,repo",
            "openid, profile, email",
            "StreamDescription.Shards[-1].ShardId",
            "a[0].b[12]",
        ] {
            assert!(is_plain_data(value), "{value}");
        }
    }

    #[test]
    fn version_ranges_are_apart() {
        assert!(is_version_range("^7.1.3"));
        assert!(!is_version_range("7.1.3x"));
        assert!(!is_plain_data("^7.1.3x"));
    }

    #[test]
    fn generated_values_are_not() {
        for value in [
            "Zx9qL2mN8vB4kR7tY1wE",
            "ghp_R8mKq2ZxP9vL3nT7wY1uE5sA0dF6gH4jK",
            "2024-01-01Zx9qL2mN8vB4",
            "user:Zx9qL2mN8vB4@example.com",
            "Zx9qL2mN:8080",
            "abc.Zx9q-L2mN.vB4k:443",
            "1.2.3.4.5",
            "v1.2",
            "7.1.3x",
            "16pxZx9q",
            "30 Zx9qL2mN8vB4",
            "123456",
            "[abc]",
            "Zx9q[1].L2mN8vB4kR7tY1wE",
            "k7Psv[1].x9Qz2Lm8Vb4Kp7Wr3",
            "x[y].z",
            "a[0",
            "zx9ql2,mn8vb4",
            "token",
            "Zx9qL2mN,vB4kR7tY",
            "* * * Zx9q *",
            "dGhpcyBpcyBhIHRva2Vu",
            "a1b2-c3d4@",
            // A person may choose a secret outside ASCII; a tokenizer's piece looks alike.
            "日本語トークン",
            "▁the",
        ] {
            assert!(!is_plain_data(value), "{value}");
        }
    }
}
