//! The table of names other programs load: each refused before it exists, at any
//! depth and in any letter case; look-alikes allowed; `.pth` imports; the docs list.

use std::path::Path;

use super::{local_only, ws};
use crate::protected::rules;

/// A path the pattern of `rule` matches: `*.pth` becomes `zz.pth`, `stem.*` becomes
/// `stem.toml`, a directory gets a file beneath it.
fn example(rule: &rules::Rule) -> String {
    let names: Vec<String> = rule
        .names()
        .map(|name| {
            if let Some(suffix) = name.strip_prefix('*') {
                format!("zz{suffix}")
            } else if let Some(stem) = name.strip_suffix(".*") {
                format!("{stem}.toml")
            } else {
                name.to_owned()
            }
        })
        .collect();
    let mut path = names.join("/");
    if rule.beneath() {
        path.push_str("/settings.json");
    }
    path
}

/// Upper-cases every other letter: `.claude/x` → `.ClAuDe/X`.
fn mixed_case(path: &str) -> String {
    path.chars()
        .enumerate()
        .map(|(index, c)| {
            if index % 2 == 1 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect()
}

#[test]
fn every_name_of_the_table_is_refused_before_it_exists_at_any_depth_in_any_case() {
    let w = ws();
    let protected = local_only();
    for rule in rules::RULES {
        let path = example(rule);
        for given in [
            path.clone(),
            format!("deep/er/{path}"),
            mixed_case(&path),
            format!("Deep/{}", path.to_uppercase()),
        ] {
            assert!(
                w.root.join(&given).symlink_metadata().is_err() || given.starts_with(".git"),
                "{given} exists"
            );
            let err = w.check(&protected, &given).unwrap_err();
            assert!(err.starts_with(&format!("refused: `{given}` is ")), "{err}");
            assert!(err.contains(rule.what), "{given}: {err}");
        }
        // The name alone (the directory being created, or removed) is refused too.
        let first = path
            .split('/')
            .take(rule.names().count())
            .collect::<Vec<_>>();
        let whole = first.join("/");
        assert!(w.check(&protected, &whole).is_err(), "{whole}");
    }
}

#[test]
fn what_only_looks_like_a_protected_name_is_allowed() {
    let w = ws();
    let protected = local_only();
    std::fs::create_dir_all(w.root.join("docs")).unwrap();
    std::fs::write(w.root.join("docs/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::create_dir(w.root.join("docs/refs")).unwrap();
    for path in [
        "src/main.rs",
        "README.md",
        "docs/HEADING.md",
        "docs/objects.txt",
        "docs/head.md",
        "docs/refs.md",
        "objects.txt",
        "objects/x",
        "HEAD",
        "refs/heads/main",
        "models/resnet.pth",
        "lib/site-packages/pkg/data.pth",
        ".envrc.example",
        "env/claude.md",
        "my.git/config",
        "githooks/pre-commit",
        "premise.toml",
        "sitecustomizer.py",
        ".vimrc.bak",
    ] {
        assert!(w.check(&protected, path).is_ok(), "{path}");
    }
}

#[test]
fn a_module_a_pth_file_imports_is_protected() {
    let w = ws();
    let protected = local_only();
    let site = w.root.join(".venv/lib/python3.11/site-packages");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::write(site.join("_virtualenv.pth"), "import _virtualenv\n").unwrap();
    let err = w
        .check(
            &protected,
            ".venv/lib/python3.11/site-packages/_virtualenv.py",
        )
        .unwrap_err();
    assert!(err.contains("Python runs it at every start"), "{err}");
    let err = w
        .check(&protected, ".venv/lib/python3.11/site-packages/zz.pth")
        .unwrap_err();
    assert!(err.contains("`.pth`"), "{err}");
    assert!(
        w.check(
            &protected,
            ".venv/lib/python3.11/site-packages/requests/api.py"
        )
        .is_ok()
    );
}

#[test]
fn docs_security_lists_every_pattern_with_its_program_and_source() {
    let docs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/security.md"),
    )
    .unwrap();
    let start = docs
        .find("## Files other programs load by themselves")
        .expect("the section");
    let section = &docs[start..];
    let section = &section[..section[3..]
        .find("\n## ")
        .map_or(section.len(), |end| end + 3)];
    for rule in rules::RULES {
        assert!(
            section.contains(&format!("`{}`", rule.pattern)),
            "{} is not in docs/security.md",
            rule.pattern
        );
        assert!(section.contains(rule.source), "{}", rule.source);
    }
}
