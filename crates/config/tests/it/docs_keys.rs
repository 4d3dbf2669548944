//! docs/configuration.md and the file format agree: the documented example is a valid
//! file, and every key each table accepts is in it. The accepted keys are asked of the
//! parser itself (an unknown key's error lists them), so a key added to a library type
//! fails this test until it is documented, and a documented key that does not exist
//! fails the parse.

use std::path::Path;

use oxydra_config::{ConfigError, parse};

/// docs/configuration.md.
fn doc() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/configuration.md");
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The documented example: the `toml` block that begins with `[provider]`.
fn example(doc: &str) -> String {
    let start = doc
        .find("```toml\n[provider]")
        .expect("the example file in docs/configuration.md")
        + "```toml\n".len();
    let rest = &doc[start..];
    let end = rest.find("\n```").expect("the end of the example");
    rest[..end].to_owned()
}

/// The keys a table accepts, as the parser lists them for an unknown key put at
/// `prefix` (the text that opens the table, with what the table requires).
fn accepted(prefix: &str) -> Vec<String> {
    let text = format!("{prefix}\nnot_a_key_of_any_table = 1\n");
    match parse(Path::new("probe.toml"), &text) {
        Err(ConfigError::UnknownKey { expected, .. }) => expected
            .split(", ")
            .flat_map(|part| part.split(" or "))
            .map(|key| key.trim().to_owned())
            .filter(|key| !key.is_empty())
            .collect(),
        other => panic!("{prefix}: expected an unknown-key error, got {other:?}"),
    }
}

/// The keys documented for the table at `path` (dotted; of an array of tables, the
/// keys of all its entries).
fn documented_at(root: &toml::Table, path: &str) -> Option<Vec<String>> {
    let mut tables = vec![root];
    for part in path.split('.').filter(|part| !part.is_empty()) {
        tables = tables
            .into_iter()
            .filter_map(|table| table.get(part))
            .flat_map(|value| match value {
                toml::Value::Table(inner) => vec![inner],
                toml::Value::Array(items) => {
                    items.iter().filter_map(|item| item.as_table()).collect()
                }
                _ => Vec::new(),
            })
            .collect();
    }
    (!tables.is_empty()).then(|| {
        tables
            .iter()
            .flat_map(|table| table.keys().cloned())
            .collect()
    })
}

#[test]
fn the_documented_example_is_a_valid_file() {
    let text = example(&doc());
    if let Err(error) = parse(Path::new("docs/configuration.md"), &text) {
        panic!("the example of docs/configuration.md does not parse: {error}");
    }
}

#[test]
fn every_key_of_every_table_is_documented() {
    let doc = doc();
    let example: toml::Table = example(&doc).parse().expect("the example is TOML");
    let tables = [
        ("", ""),
        ("provider", "[provider]"),
        ("provider.sampling", "[provider.sampling]"),
        (
            "provider.fallback",
            "[[provider.fallback]]\nkind = \"openai\"\nmodel = \"m\"",
        ),
        ("runtime", "[runtime]"),
        ("memory", "[memory]"),
        ("tools", "[tools]"),
        ("tools.web_fetch", "[tools.web_fetch]"),
        ("tools.shell", "[tools.shell]"),
        ("tools.file_search", "[tools.file_search]"),
        ("tools.file_read", "[tools.file_read]"),
        ("sandbox", "[sandbox]"),
        ("serve", "[serve]"),
        ("agents", "[[agents]]\nname = \"a\"\ntype = \"agent\""),
    ];
    let mut missing = Vec::new();
    for (path, prefix) in tables {
        let Some(documented) = documented_at(&example, path) else {
            missing.push(format!("[{path}] (the whole table)"));
            continue;
        };
        for key in accepted(prefix) {
            if !documented.contains(&key) {
                missing.push(if path.is_empty() {
                    key
                } else {
                    format!("{path}.{key}")
                });
            }
        }
    }
    // A rule's parameters depend on its kind: each is documented somewhere.
    for key in accepted("[[rules]]\ntool = \"x\"\nkind = \"exit_loop\"") {
        if !doc.contains(&format!("{key} =")) {
            missing.push(format!("rules.{key}"));
        }
    }
    assert!(
        missing.is_empty(),
        "keys the file accepts that docs/configuration.md's example does not show: {missing:?}"
    );
}
