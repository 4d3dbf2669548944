//! [`Scrubber`]: built-in patterns, optional user patterns and entropy detection.

use std::borrow::Cow;
use std::sync::Arc;

use regex::{Regex, RegexSet};

use crate::entropy;
use crate::error::ScrubError;
use crate::keyword_patterns::{builtins, collect_builtins, collect_builtins_with};
use crate::known_secrets::KnownSecrets;
use crate::lazy_regex::Unavailable;
use crate::memo::Memo;
use crate::merge::{Candidate, PRIORITY_CUSTOM, drop_marker_overlaps, merge, render};
use crate::redaction::{Redaction, RedactionKind, Scrubbed};

/// A configured scrubber. [`Scrubber::new`] (or [`crate::scrub`]) uses the built-in
/// patterns and entropy detection; [`Scrubber::with_patterns`] adds user patterns.
///
/// ```
/// use oxydra_scrubbing::Scrubber;
///
/// let scrubber = Scrubber::with_patterns([("employee_id", r"EMP-\d{6}")])?
///     .with_entropy_detection(false);
/// let out = scrubber.scrub("badge EMP-123456 issued");
/// assert_eq!(out.text, "badge [REDACTED] issued");
/// assert_eq!(out.redactions[0].kind.as_str(), "employee_id");
/// # Ok::<(), oxydra_scrubbing::ScrubError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Scrubber {
    custom: Option<Arc<CustomPatterns>>,
    known: Option<Arc<KnownSecrets>>,
    entropy: bool,
    /// What this configuration found in the texts it scrubbed last
    /// ([`Scrubber::with_memo`]); shared by the scrubber's clones.
    memo: Option<Arc<Memo>>,
}

#[derive(Debug)]
struct CustomPatterns {
    set: RegexSet,
    patterns: Vec<(Regex, Arc<str>)>,
}

impl Default for Scrubber {
    fn default() -> Self {
        Self::new()
    }
}

impl Scrubber {
    /// The default scrubber: built-in patterns and entropy detection.
    pub(crate) const DEFAULT: Scrubber = Scrubber {
        custom: None,
        known: None,
        entropy: true,
        memo: None,
    };

    /// A scrubber with the built-in patterns and entropy detection.
    pub fn new() -> Self {
        Self::DEFAULT
    }

    /// A scrubber with the built-in patterns plus user patterns, given as
    /// `(name, regex)` pairs. The name becomes the redaction kind
    /// ([`RedactionKind::Custom`]). When a pattern has a capture group named `secret`,
    /// only that group is redacted; otherwise the whole match is.
    ///
    /// # Errors
    /// [`ScrubError::InvalidPattern`] naming the first pattern that does not compile,
    /// [`ScrubError::MatchesEmpty`] for a pattern that matches the empty string,
    /// [`ScrubError::EmptyName`], [`ScrubError::PatternSet`] when the set is too large,
    /// and [`ScrubError::Builtin`] if the built-in patterns are unavailable.
    pub fn with_patterns<I, N, P>(patterns: I) -> Result<Self, ScrubError>
    where
        I: IntoIterator<Item = (N, P)>,
        N: Into<String>,
        P: AsRef<str>,
    {
        builtins().map_err(|message| ScrubError::Builtin {
            message: message.to_owned(),
        })?;
        let mut compiled = Vec::new();
        let mut sources = Vec::new();
        for (name, pattern) in patterns {
            let name: String = name.into();
            let pattern = pattern.as_ref();
            if name.is_empty() {
                return Err(ScrubError::EmptyName {
                    pattern: pattern.to_owned(),
                });
            }
            let regex = Regex::new(pattern).map_err(|source| ScrubError::InvalidPattern {
                name: name.clone(),
                source,
            })?;
            if regex.is_match("") {
                return Err(ScrubError::MatchesEmpty { name });
            }
            sources.push(pattern.to_owned());
            compiled.push((regex, Arc::from(name)));
        }
        let custom = if compiled.is_empty() {
            None
        } else {
            let set = RegexSet::new(&sources).map_err(|source| ScrubError::PatternSet {
                count: sources.len(),
                source,
            })?;
            Some(Arc::new(CustomPatterns {
                set,
                patterns: compiled,
            }))
        };
        Ok(Self {
            custom,
            known: None,
            entropy: true,
            memo: None,
        })
    }

    /// Adds secrets known by value, as `(name, value)` pairs: each is redacted
    /// wherever it appears, plain or in the encodings one command line produces
    /// (spaced, split, base64, hex, URL-encoded, decimal or octal bytes; see
    /// [`RedactionKind::KnownSecret`]). The name is the redaction kind; the value never
    /// leaves the scrubber. Adds to the secrets given before (a scrubber
    /// handed on can be given more).
    ///
    /// ```
    /// use oxydra_scrubbing::Scrubber;
    ///
    /// let key = "sk-test-9f8e7d6c5b4a39281706";
    /// let scrubber = Scrubber::new().with_known_secrets([("OPENAI_API_KEY", key)])?;
    /// // `printf '%s' "$KEY" | od -An -tu1`: the key as decimal bytes.
    /// let bytes: Vec<String> = key.bytes().map(|b| b.to_string()).collect();
    /// let text = format!("out: {}\n", bytes.join(" "));
    /// let out = scrubber.scrub(&text);
    /// assert_eq!(out.text, "out: [REDACTED]\n");
    /// assert_eq!(out.redactions[0].kind.as_str(), "OPENAI_API_KEY");
    /// # Ok::<(), oxydra_scrubbing::ScrubError>(())
    /// ```
    ///
    /// # Errors
    /// [`ScrubError::KnownSecretTooShort`] for a value shorter than
    /// [`MIN_KNOWN_SECRET_LEN`](crate::MIN_KNOWN_SECRET_LEN) bytes (it would be found in
    /// ordinary text), [`ScrubError::EmptyName`] for an empty name and
    /// [`ScrubError::KnownSecrets`] when the set is too large to compile.
    pub fn with_known_secrets<I, N, V>(mut self, secrets: I) -> Result<Self, ScrubError>
    where
        I: IntoIterator<Item = (N, V)>,
        N: Into<String>,
        V: Into<String>,
    {
        let mut all: Vec<(String, String)> = self
            .known
            .as_ref()
            .map(|known| known.given().to_vec())
            .unwrap_or_default();
        all.extend(
            secrets
                .into_iter()
                .map(|(name, value)| (name.into(), value.into())),
        );
        self.known = if all.is_empty() {
            None
        } else {
            Some(Arc::new(KnownSecrets::new(all)?))
        };
        Ok(self.with_fresh_memo())
    }

    /// Turns entropy detection of unlabelled strings on (the default) or off.
    #[must_use]
    pub fn with_entropy_detection(mut self, enabled: bool) -> Self {
        self.entropy = enabled;
        self.with_fresh_memo()
    }

    /// Remembers what the last texts held (64 texts of 256 bytes or more, 4 MiB at
    /// most, and 64 shorter ones), so that scrubbing one of them again costs a compare
    /// instead of a scan: a run scrubs a tool's output for the event that reports it,
    /// for the model and, when it is clean, where it is stored, and each event's
    /// short texts (a tool's name and arguments) where it is emitted and printed.
    /// Clones share the memory; a builder method that changes what is scrubbed gives
    /// the new scrubber an empty one, so nothing remembered under one configuration
    /// answers for another. The result is the same as without it.
    ///
    /// ```
    /// use oxydra_scrubbing::Scrubber;
    ///
    /// let scrubber = Scrubber::new().with_memo();
    /// let output = format!("{}\npassword=hunter2hunter2\n", "log line\n".repeat(40));
    /// let first = scrubber.scrub(&output);
    /// let again = scrubber.clone().scrub(&output);
    /// assert_eq!(first.text, again.text);
    /// assert_eq!(first.redactions, again.redactions);
    /// ```
    #[must_use]
    pub fn with_memo(mut self) -> Self {
        self.memo = Some(Arc::new(Memo::default()));
        self
    }

    /// An empty memo in place of the one this scrubber had (if any): its
    /// configuration has changed.
    fn with_fresh_memo(mut self) -> Self {
        if self.memo.is_some() {
            self.memo = Some(Arc::new(Memo::default()));
        }
        self
    }

    /// Whether entropy detection is on.
    pub fn entropy_detection(&self) -> bool {
        self.entropy
    }

    /// Scrubs `text`. The result borrows `text` when nothing was redacted.
    pub fn scrub<'a>(&self, text: &'a str) -> Scrubbed<'a> {
        let Some(memo) = self.memo.as_ref().filter(|_| Memo::worth_it(text)) else {
            return self.scan(text);
        };
        if let Some(redactions) = memo.get(text) {
            return rendered(text, redactions);
        }
        let scrubbed = self.scan(text);
        // A text withheld because a pattern could not compile is not remembered: the
        // next scrub tries again.
        if !scrubbed
            .redactions
            .iter()
            .any(|r| r.kind == RedactionKind::Unverified)
        {
            memo.put(text, &scrubbed.redactions);
        }
        scrubbed
    }

    /// [`Scrubber::scrub`] without the memo: every layer over `text`. Text with
    /// escaped line breaks is read with them opened (`escaped_lines`): same length,
    /// so what is found there is redacted in `text`.
    fn scan<'a>(&self, original: &'a str) -> Scrubbed<'a> {
        let opened = crate::escaped_lines::with_escapes_opened(original);
        let text = opened.as_deref().unwrap_or(original);
        let mut candidates = Vec::new();
        if collect_patterns(text, &mut candidates).is_err() && !text.is_empty() {
            return withheld(original);
        }
        if let Some(custom) = &self.custom {
            custom.collect(text, &mut candidates);
        }
        if let Some(known) = &self.known {
            known.collect(text, &mut candidates);
        }
        let mut odd_keys = Vec::new();
        if self.entropy {
            entropy::collect(text, &mut candidates, &mut odd_keys);
        }
        if !odd_keys.is_empty() && collect_odd_keys(text, &odd_keys, &mut candidates).is_err() {
            return withheld(original);
        }
        if let Some(folded) = crate::fold::fold(text)
            && self.collect_folded(&folded, &mut candidates).is_err()
        {
            return withheld(original);
        }
        if self.entropy {
            drop_public_block_runs(text, &mut candidates);
        }
        drop_marker_overlaps(text, &mut candidates);
        if candidates.is_empty() {
            return rendered(original, Vec::new());
        }
        rendered(original, merge(candidates))
    }
}

impl Scrubber {
    /// Scans text folded to ASCII (see `fold`) and maps what it finds back.
    fn collect_folded(
        &self,
        folded: &crate::fold::Folded,
        out: &mut Vec<Candidate>,
    ) -> Result<(), Unavailable> {
        let mut found = Vec::new();
        collect_patterns(&folded.text, &mut found)?;
        if let Some(custom) = &self.custom {
            custom.collect(&folded.text, &mut found);
        }
        if let Some(known) = &self.known {
            known.collect(&folded.text, &mut found);
        }
        if self.entropy {
            entropy::collect(&folded.text, &mut found, &mut Vec::new());
        }
        for candidate in found {
            if let Some((start, end)) = folded.original(candidate.range.start, candidate.range.end)
            {
                out.push(Candidate {
                    range: start..end,
                    ..candidate
                });
            }
        }
        Ok(())
    }
}

/// Drops the high-entropy runs inside whole blocks of public data (a certificate's
/// body, a public key): their look is random, their content is public. Every other
/// layer still reads them.
fn drop_public_block_runs(text: &str, candidates: &mut Vec<Candidate>) {
    if !candidates
        .iter()
        .any(|c| c.kind == RedactionKind::HighEntropy)
        || memchr::memmem::find(text.as_bytes(), b"-----BEGIN ").is_none()
    {
        return;
    }
    // Sorted and disjoint: the block that may hold a run is the last one starting
    // at or before it.
    let public = crate::pem::public_blocks(text);
    candidates.retain(|c| {
        let before = public.partition_point(|block| block.start <= c.range.start);
        let inside = before
            .checked_sub(1)
            .and_then(|i| public.get(i))
            .is_some_and(|block| c.range.end <= block.end);
        c.kind != RedactionKind::HighEntropy || !inside
    });
}

/// The built-in patterns, wrapped keys and gitleaks' rules: one keyword pass
/// (`keyword_scan`) finds both the labelled values' trigger words and the rules'
/// keywords.
fn collect_patterns(text: &str, out: &mut Vec<Candidate>) -> Result<(), Unavailable> {
    let hits = crate::keyword_patterns::scan(text)?;
    collect_builtins_with(text, &hits, out)?;
    crate::wrapped::collect(text, out);
    crate::rule_scan::collect_hits(text, hits.rules, out)
}

/// Runs the built-in patterns again over a copy of `text` with the keys spelt in odd
/// mixed case (`tOkEn=…`) lowercased: same length, so the ranges found hold for
/// `text`.
fn collect_odd_keys(
    text: &str,
    keys: &[std::ops::Range<usize>],
    out: &mut Vec<Candidate>,
) -> Result<(), Unavailable> {
    let mut lowered = text.to_owned();
    for key in keys {
        if let Some(word) = lowered.get_mut(key.clone()) {
            word.make_ascii_lowercase();
        }
    }
    collect_builtins(&lowered, out)
}

/// Fail-closed result when a built-in pattern the text needed could not be compiled.
/// `text` with `redactions` (sorted, not overlapping) replaced by their markers;
/// borrowed when there are none.
fn rendered(text: &str, redactions: Vec<Redaction>) -> Scrubbed<'_> {
    if redactions.is_empty() {
        return Scrubbed {
            text: Cow::Borrowed(text),
            redactions,
        };
    }
    Scrubbed {
        text: Cow::Owned(render(text, &redactions)),
        redactions,
    }
}

fn withheld(text: &str) -> Scrubbed<'static> {
    let redactions = vec![Redaction {
        range: 0..text.len(),
        kind: RedactionKind::Unverified,
    }];
    Scrubbed {
        text: Cow::Owned(render(text, &redactions)),
        redactions,
    }
}

impl CustomPatterns {
    fn collect(&self, text: &str, out: &mut Vec<Candidate>) {
        if !self.set.is_match(text) {
            return;
        }
        for index in self.set.matches(text).iter() {
            let Some((regex, name)) = self.patterns.get(index) else {
                continue;
            };
            let priority = PRIORITY_CUSTOM.saturating_add(u16::try_from(index).unwrap_or(u16::MAX));
            for caps in regex.captures_iter(text) {
                let Some(m) = caps.name("secret").or_else(|| caps.get(0)) else {
                    continue;
                };
                if !m.range().is_empty() {
                    out.push(Candidate {
                        range: m.range(),
                        kind: RedactionKind::Custom(Arc::clone(name)),
                        priority,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn withheld_text_is_fully_redacted() {
        let out = withheld("password=hunter22 and more");
        assert_eq!(out.text, "[REDACTED:unverified]");
        assert_eq!(out.redactions.len(), 1);
        assert_eq!(out.redactions[0].range, 0..26);
        assert_eq!(out.redactions[0].kind, RedactionKind::Unverified);
    }

    #[test]
    fn disguised_secrets_are_redacted_whole() {
        // Zero-width characters, Unicode blanks, fullwidth forms and homoglyphs.
        for (text, kept) in [
            ("раssword=hunter22", "раssword="),
            ("pass\u{200B}word = hunter22", "pass\u{200B}word = "),
            ("token\u{00A0}=\u{00A0}ab12cd34ef", "token\u{00A0}=\u{00A0}"),
            ("ｐａｓｓｗｏｒｄ: ｈｕｎｔｅｒ２２", "ｐａｓｓｗｏｒｄ: "),
            (
                "key ghp_16C7e42F292c\u{200B}6912E7710c838347Ae178B4a end",
                "key ",
            ),
        ] {
            let out = Scrubber::new().scrub(text);
            assert!(out.text.starts_with(kept), "{text:?} -> {:?}", out.text);
            assert!(out.text.contains("[REDACTED"), "{text:?} -> {:?}", out.text);
            assert!(
                !out.text.contains("2F292c")
                    && !out.text.contains("hunter")
                    && !out.text.contains("ｈｕｎｔ")
                    && !out.text.contains("cd34"),
                "{:?}",
                out.text
            );
        }
    }

    #[test]
    fn secrets_after_escaped_line_breaks_are_found_and_the_escapes_kept() {
        let scrubber = Scrubber::new();
        let out = scrubber.scrub(r#"{"out": "id\nAKIAZ7X9QL2MN8VB4KP7\n"}"#);
        assert_eq!(out.text, r#"{"out": "id\n[REDACTED]\n"}"#);
        let out = scrubber.scrub(r#""a\tghp_16C7e42F292c6912E7710c838347Ae178B4a""#);
        assert!(out.text.starts_with(r#""a\t[REDACTED"#), "{}", out.text);
        let yaml = r#"{"config": "db:\n  password:\n    Tr0ub4dor&3\n"}"#;
        assert!(!scrubber.scrub(yaml).text.contains("Tr0ub4dor"));
        let plain = r#"{"path": "C:\\new\\tools", "re": "\\d+"}"#;
        assert!(scrubber.scrub(plain).is_clean());
    }

    #[test]
    fn a_certificate_s_body_is_public_and_what_follows_it_is_read() {
        let body = "MIIESTCCAzGgAwIBAgITBntQXCplJ7wevi2i0ZmY7bibLDANBgkqhkiG9w0BAQsF\n\
                    ADA5MQswCQYDVQQGEwJVUzEPMA0GA1UEChMGQW1hem9uMRkwFwYDVQQDExBBbWF6";
        let cert = format!("-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n");
        let scrubber = Scrubber::new();
        assert!(
            scrubber.scrub(&cert).is_clean(),
            "{}",
            scrubber.scrub(&cert).text
        );
        let after = format!("{cert}worker key Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF\n");
        assert!(!scrubber.scrub(&after).text.contains("Zx9qL2mN8vB4"));
        // Without its END line the block marks nothing.
        let cut = format!("-----BEGIN CERTIFICATE-----\n{body}\n");
        assert!(!scrubber.scrub(&cut).is_clean());
    }

    #[test]
    fn keys_in_odd_mixed_case_are_found() {
        let out = Scrubber::new().scrub("tOkEn=hunter2abc\n\"PaSsWoRd\": \"s3cr3t!\"");
        assert_eq!(out.text, "tOkEn=[REDACTED]\n\"PaSsWoRd\": \"[REDACTED]\"");
    }

    #[test]
    fn the_free_function_and_default_scrubber_agree() {
        let text = "token: abcd1234 and Zx9qL2mN8vB4kR7tY1wE3uI6oP0aS5dF";
        assert_eq!(crate::scrub(text), Scrubber::default().scrub(text));
    }
}
