//! The built-in patterns: every one compiles and finds its sample; a text compiles
//! only the patterns it triggers, and one that does not compile fails it.

use super::*;

/// One sample match per pattern, in pattern order.
const SAMPLES: &[&str] = &[
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "xoxb-2233445566-abcdefghijkl",
    "sk-ant-api03-abcdefghij0123456789",
    "sk-proj-abcdefghij0123456789",
    "AIzaSyD-abcdefghijklmnopqrstuvwxyz01234",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc",
    "glpat-abcdefghij0123456789",
    "npm_abcdefghij0123456789abcdefghij012345",
    "hf_abcdefghij0123456789abcdefghij01",
    "SG.abcdefghij012345.abcdefghij012345",
    "postgres://app:hunter22@db",
    "https://0123456789abcdef0123@o1.ingest.sentry.io/1",
    "mysql -u root -phunter22 db",
    "sshpass -p hunter22 ssh host",
    "redis-cli -h x -a hunter22",
    "docker login -u ada -p hunter22",
    "Authorization: Bearer abcdef",
    "bearer abcdefghijklmnop1",
    "curl -u ada:lovelace https://x",
    "api_key=abc123",
    "--password hunter22",
];

#[test]
fn builtins_compile() {
    let builtins = builtins().unwrap();
    assert_eq!(builtins.patterns.len(), builtins.set.len());
    // Compiled on first use at run time: every one must compile.
    for pattern in &builtins.patterns {
        pattern.regex.get().unwrap();
        for lazy in [&pattern.line_trigger, &pattern.anchored]
            .into_iter()
            .flatten()
        {
            lazy.get().unwrap();
        }
    }
    crate::markup::compile().unwrap();
    crate::prose::compile().unwrap();
    // Every pattern's trigger must occur in every match of the pattern.
    let defs = pattern_defs();
    for (def, sample) in defs.iter().zip(SAMPLES) {
        let re = Regex::new(&def.regex).unwrap();
        let trigger = Regex::new(def.trigger).unwrap();
        let m = re
            .find(sample)
            .unwrap_or_else(|| panic!("{} misses {sample}", def.regex));
        assert!(
            trigger.is_match(m.as_str()),
            "trigger {} not in {}",
            def.trigger,
            m.as_str()
        );
    }
    assert_eq!(defs.len(), SAMPLES.len());
}

#[test]
fn only_the_patterns_a_text_triggers_are_compiled() {
    let builtins = build().unwrap();
    let compiled = |builtins: &Builtins| {
        builtins
            .patterns
            .iter()
            .filter(|p| p.regex.is_compiled())
            .count()
    };
    assert_eq!(compiled(&builtins), 0);
    let mut out = Vec::new();
    builtins
        .collect("plain notes about the weather, nothing else", &mut out)
        .unwrap();
    assert!(out.is_empty());
    // The labelled pattern runs on every text; its value pattern waits for a key.
    let labelled = builtins.patterns.iter().find(|p| p.always).unwrap();
    assert!(labelled.line_trigger.as_ref().unwrap().is_compiled());
    assert!(!labelled.anchored.as_ref().unwrap().is_compiled());
    assert_eq!(compiled(&builtins), 0);

    builtins
        .collect(
            "export GITHUB=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            &mut out,
        )
        .unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(compiled(&builtins), 1);
}

#[test]
fn a_pattern_that_does_not_compile_fails_the_text_that_needs_it() {
    let broken = Builtins {
        set: RegexSet::new(["xoxb-"]).unwrap(),
        patterns: vec![Compiled {
            regex: LazyRegex::new("(unclosed"),
            rule: Rule::Whole(FixedKind::Jwt),
            line_trigger: None,
            anchored: None,
            always: false,
        }],
    };
    let mut out = Vec::new();
    // A text without the trigger never needs it.
    assert_eq!(broken.collect("nothing here", &mut out), Ok(()));
    assert_eq!(broken.collect("a xoxb- token", &mut out), Err(Unavailable));
}
