//! A setting of an untrusted project file that was not applied, as data: the key, and
//! why. Shown to people as the key (with the value or rule kind where that says more),
//! tested by programs on the key alone.

use std::fmt;

/// One setting of an untrusted file that was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    /// The dotted key (`provider.base_url`, `rules[1]`).
    pub key: String,
    /// Why it was not applied.
    pub reason: IgnoredReason,
}

/// Why a setting of an untrusted file was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IgnoredReason {
    /// It grants power (commands, allow-lists, where the key goes, prices …), or is a
    /// key no rule classifies.
    GrantsPower,
    /// A limit above the user's (or the default).
    RaisesLimit,
    /// A choice less strict than the user's (or the default); the value as written.
    Loosens(String),
    /// `provider.model` naming a model file, which is loaded (and parsed) as code.
    LocalModelFile,
    /// A rule that does not only restrict; its kind as written.
    RuleLoosens(String),
    /// A value of the wrong shape for its key.
    Malformed,
}

impl Ignored {
    pub(crate) fn new(key: impl Into<String>, reason: IgnoredReason) -> Self {
        Self {
            key: key.into(),
            reason,
        }
    }
}

impl fmt::Display for Ignored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = &self.key;
        match &self.reason {
            IgnoredReason::Loosens(value) => write!(f, "{key} = {value}"),
            IgnoredReason::LocalModelFile => write!(f, "{key} (a local model file)"),
            IgnoredReason::RuleLoosens(kind) => write!(f, "{key} (kind = {kind})"),
            IgnoredReason::GrantsPower | IgnoredReason::RaisesLimit | IgnoredReason::Malformed => {
                f.write_str(key)
            }
        }
    }
}

/// The settings as one list for a message: `a, b = "x", c`.
pub fn listed(ignored: &[Ignored]) -> String {
    ignored
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
