//! Where a secret's word sits that makes it no label: inside a shell expansion that
//! fails when a variable is unset (`${TOKEN:?…}`), inside an Amazon Resource Name
//! (`arn:aws:secretsmanager:…`), after a quoted `::` type path (`"AWS::KMS::Key":`), or
//! as the argument of a flag or an assignment (`vault kv get -field=password …`).
//! The labelled layer asks [`is_not_a_label`] before it classifies a key.

/// The word at `key_start..key_end` is part of a name, an expansion or a type's path,
/// not a key labelling a value.
pub(crate) fn is_not_a_label(text: &str, key_start: usize, key_end: usize) -> bool {
    names_a_type(text, key_start)
        || is_required_variable(text, key_start, key_end)
        || in_arn(text, key_start, key_end)
        || is_argument(text, key_start, key_end)
}

/// `vault kv get -field=password secret/data/db`, `--type token json`, `name=password
/// value`: the word is what a flag or an assignment is given — a field's, a type's or
/// a form's name — and the blank after it ends that argument. Only a word a blank
/// follows: one a separator follows (`-o password=…`, `name=password: …`) still labels
/// the value after it, and a flag that is itself the key (`--password hunter2`) is not
/// an argument.
fn is_argument(text: &str, key_start: usize, key_end: usize) -> bool {
    let (Some(before), Some(after)) = (text.get(..key_start), text.get(key_end..)) else {
        return false;
    };
    if !after.starts_with([' ', '\t']) {
        return false;
    }
    // `x=password`: the word is the value of an assignment to a name or a flag.
    if let Some(assigned) = before.strip_suffix('=') {
        return assigned
            .bytes()
            .next_back()
            .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
    }
    // `-field password`: the word is the argument of the flag before it.
    let Some(flag) = before.strip_suffix(' ') else {
        return false;
    };
    let flag_start = flag.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    let flag = flag.get(flag_start..).unwrap_or_default();
    let name = flag.trim_start_matches('-');
    (1..=2).contains(&(flag.len() - name.len()))
        && name.len() >= 2
        && name.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-')
}

/// `${TOKEN:?TOKEN must be set}`, `${API_KEY?}`: a shell's (and Compose's) expansion
/// that fails with the message after `?` when the variable is unset. The key is the
/// variable's name and what follows is that message, never a value; a default after
/// `:-` may be one and is still read.
fn is_required_variable(text: &str, key_start: usize, key_end: usize) -> bool {
    let opened = text
        .get(..key_start)
        .is_some_and(|before| before.ends_with("${"));
    let after = text.get(key_end..).unwrap_or_default();
    opened && (after.starts_with(":?") || after.starts_with('?'))
}

/// `arn:aws:secretsmanager:…:secret:prod/db`: a word inside an Amazon Resource Name
/// (a service's name, a resource's type), whose `:` separates the name's parts, not a
/// key from its value. Only a word the name goes on after (`:` or `/`): a `=` after
/// it is an assignment, read as one.
fn in_arn(text: &str, key_start: usize, key_end: usize) -> bool {
    let (Some(before), Some(after)) = (text.get(..key_start), text.get(key_end..)) else {
        return false;
    };
    if !after.starts_with([':', '/']) {
        return false;
    }
    // Looked for in the bytes just before the key only, so that a long text without
    // blanks costs a bounded look per key, not a walk back to its start.
    let mut from = key_start.saturating_sub(MAX_ARN_PREFIX);
    while !before.is_char_boundary(from) {
        from += 1;
    }
    let window = before.get(from..).unwrap_or_default();
    let Some(delimiter) = window
        .rfind(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '=' | '(' | '[' | ','))
    else {
        // No delimiter near: an ARN only when the text itself starts with it.
        return from == 0 && is_arn_head(window);
    };
    window.get(delimiter + 1..).is_some_and(is_arn_head)
}

/// Longest stretch before a key that is looked at for an ARN's start: an ARN's
/// partition, service, region and account take well under this.
const MAX_ARN_PREFIX: usize = 256;

/// `arn:aws:…`, `arn:aws-cn:…`: the start of an Amazon Resource Name.
fn is_arn_head(word: &str) -> bool {
    word.strip_prefix("arn:aws")
        .is_some_and(|rest| rest.starts_with(':') || rest.starts_with('-'))
}

/// `"AWS::KMS::Key": …`, `'Crypto::SecretKey' => …`: a quoted `::` path is a type's
/// name, and a map keyed by types (a registry, a dispatch table) holds data about
/// them, not a secret. A bare path may still be code assigning one
/// (`Settings::API_KEY = "…"` in Ruby).
fn names_a_type(text: &str, key_start: usize) -> bool {
    let Some(before) = text.get(..key_start) else {
        return false;
    };
    let Some(path) = before.strip_suffix("::") else {
        return false;
    };
    let head = path.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    head.ends_with(['"', '\''])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_s_or_an_assignment_s_argument_is_no_label() {
        let at = |text: &str, word: &str| {
            let start = text.find(word).unwrap();
            is_argument(text, start, start + word.len())
        };
        assert!(at(
            "vault kv get -field=password secret/data/db",
            "password"
        ));
        assert!(at(
            "vault kv get -field password secret/data/db",
            "password"
        ));
        assert!(at("form type=password name=pw", "password"));
        // A separator after the word, a flag that is the key, no flag: a label.
        assert!(!at("ssh -o password=Tr0ub4dor&3", "password"));
        assert!(!at("login --password Tr0ub4dor&3", "password"));
        assert!(!at("the password Tr0ub4dor&3", "password"));
        assert!(!at("x -p password", "password"));
        assert!(!at("1 - password Tr0ub4dor&3", "password"));
    }

    #[test]
    fn keys_inside_an_arn_are_parts_of_its_name() {
        let text = "Resource: arn:aws:secretsmanager:*:*:secret:prod/db";
        let service = text.find("secretsmanager").unwrap();
        assert!(in_arn(text, service, service + "secretsmanager".len()));
        let kind = text.find(":secret:").unwrap() + 1;
        assert!(in_arn(text, kind, kind + "secret".len()));
        assert!(!in_arn("Resource: secret:x", 10, 16), "no ARN before it");
        let assignment = "arn:aws:x:password=Tr0ub4dor&3";
        let start = assignment.find("password").unwrap();
        assert!(!in_arn(assignment, start, start + 8));
        // A long text without blanks is looked at near each key only.
        let long = format!("{}:token:x", "a".repeat(1 << 20));
        let start = long.find("token").unwrap();
        assert!(!in_arn(&long, start, start + 5));
    }
}
