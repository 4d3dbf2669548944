//! Secret rules from a maintained source, loaded from data: gitleaks' default rule set
//! (MIT), regenerated into `rules/gitleaks.rules` by `scripts/gitleaks-rules.py`, which
//! records its source, version and licence in the file's header.
//!
//! The file is compiled into the crate (`include_str!`) and parsed on first use; each
//! rule's regex is compiled the first time one of its keywords occurs in a text
//! (`rule_scan`).

use std::sync::OnceLock;

use crate::lazy_regex::{LazyRegex, Unavailable};

/// The data file, as the script wrote it.
const DATA: &str = include_str!("../rules/gitleaks.rules");

/// What an allowlist regex is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The secret (the rule's secret group).
    Secret,
    /// The rule's whole match.
    Match,
    /// The line holding the match.
    Line,
}

/// An allowlist: a match it accepts is not a secret.
#[derive(Debug, Default)]
pub(crate) struct Allowlist {
    pub(crate) regexes: Vec<(Target, LazyRegex)>,
    /// Lowercase words: a secret containing one is not a secret.
    pub(crate) stopwords: Vec<&'static str>,
}

/// One rule of the data file.
#[derive(Debug)]
pub(crate) struct Rule {
    pub(crate) id: &'static str,
    /// Lowercase keywords; the rule runs only near one (empty: runs everywhere).
    pub(crate) keywords: Vec<&'static str>,
    /// The capture group holding the secret: `-1` the first group that matched (the
    /// whole match when none did), `0` the whole match, `n` group `n`.
    pub(crate) group: i32,
    /// The secret's minimum Shannon entropy (bits per character), if any.
    pub(crate) entropy: Option<f64>,
    pub(crate) regex: LazyRegex,
    /// Whether the regex spans lines on purpose (`(?s` or `[\r\n]` in its source:
    /// a `curl` command continued over lines, a Kubernetes secret).
    pub(crate) multiline: bool,
    pub(crate) allow: Allowlist,
}

/// Every rule plus the global allowlist.
#[derive(Debug, Default)]
pub(crate) struct RuleSet {
    pub(crate) global: Allowlist,
    pub(crate) rules: Vec<Rule>,
}

/// The parsed rules; `Err` if the data file is malformed (a bug caught by the tests:
/// the scrub then fails closed).
pub(crate) fn rules() -> Result<&'static RuleSet, Unavailable> {
    static RULES: OnceLock<Result<RuleSet, Unavailable>> = OnceLock::new();
    RULES.get_or_init(|| parse(DATA)).as_ref().map_err(|e| *e)
}

/// Parses the data format (see `scripts/gitleaks-rules.py`).
pub(crate) fn parse(data: &'static str) -> Result<RuleSet, Unavailable> {
    let mut set = RuleSet::default();
    let mut in_global = false;
    for line in data.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split('\t');
        let kind = fields.next().unwrap_or_default();
        match kind {
            "global" => in_global = true,
            "rule" => {
                in_global = false;
                set.rules.push(Rule {
                    id: fields.next().ok_or(Unavailable)?,
                    keywords: Vec::new(),
                    group: -1,
                    entropy: None,
                    regex: LazyRegex::new(String::new()),
                    multiline: false,
                    allow: Allowlist::default(),
                });
            }
            "allow" | "stop" => {
                let allow = if in_global {
                    &mut set.global
                } else {
                    &mut set.rules.last_mut().ok_or(Unavailable)?.allow
                };
                if kind == "stop" {
                    allow.stopwords.push(fields.next().ok_or(Unavailable)?);
                } else {
                    let target = match fields.next() {
                        Some("secret") => Target::Secret,
                        Some("match") => Target::Match,
                        Some("line") => Target::Line,
                        _ => return Err(Unavailable),
                    };
                    let source = fields.next().ok_or(Unavailable)?;
                    allow.regexes.push((target, LazyRegex::new(source)));
                }
            }
            _ => {
                let rule = set.rules.last_mut().ok_or(Unavailable)?;
                let value = fields.next().ok_or(Unavailable)?;
                match kind {
                    "keywords" => {
                        rule.keywords = std::iter::once(value).chain(fields).collect();
                    }
                    "group" => rule.group = value.parse().map_err(|_| Unavailable)?,
                    "entropy" => rule.entropy = Some(value.parse().map_err(|_| Unavailable)?),
                    "regex" => {
                        rule.multiline = value.contains("(?s") || value.contains(r"[\r\n]");
                        rule.regex = LazyRegex::new(value);
                    }
                    _ => return Err(Unavailable),
                }
            }
        }
    }
    if set.rules.is_empty() {
        return Err(Unavailable);
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_file_parses_and_every_regex_compiles() {
        let set = rules().unwrap();
        assert!(set.rules.len() > 200, "{} rules", set.rules.len());
        for rule in &set.rules {
            let regex = rule
                .regex
                .get()
                .unwrap_or_else(|_| panic!("rule {} does not compile", rule.id));
            assert!(!regex.is_match(""), "rule {} matches nothing", rule.id);
            assert!(
                rule.keywords.iter().all(|k| *k == k.to_ascii_lowercase()),
                "{}",
                rule.id
            );
            for (_, allow) in &rule.allow.regexes {
                assert!(allow.get().is_ok(), "an allowlist of {} fails", rule.id);
            }
        }
        for (_, allow) in &set.global.regexes {
            assert!(allow.get().is_ok(), "a global allowlist regex fails");
        }
        assert!(!set.global.stopwords.is_empty());
    }

    #[test]
    fn malformed_data_is_refused() {
        assert!(parse("").is_err());
        assert!(parse("regex\tabc\n").is_err(), "a field before any rule");
        assert!(parse("rule\tx\ngroup\tnot-a-number\n").is_err());
        assert!(parse("rule\tx\nallow\telsewhere\tabc\n").is_err());
        assert!(parse("rule\tx\nwhatever\tabc\n").is_err());
        let set = parse(
            "global\nstop\tfoo\n\nrule\tx\nkeywords\ta\tb\ngroup\t1\nentropy\t3.5\nregex\ta(b+)\n",
        )
        .unwrap();
        assert_eq!(set.global.stopwords, ["foo"]);
        let rule = &set.rules[0];
        assert_eq!((rule.id, rule.group, rule.entropy), ("x", 1, Some(3.5)));
        assert_eq!(rule.keywords, ["a", "b"]);
    }
}
