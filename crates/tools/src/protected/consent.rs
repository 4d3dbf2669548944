//! Asking a person before a protected path is written: the embedding program (the CLI's
//! `chat`) gives the policy a [`ProtectedWriteConsent`]; without one (`run`, `serve`)
//! every protected write is refused.

use std::fmt;

use async_trait::async_trait;

use crate::call_preview::CallPreview;

/// A file tool's write to a protected path, as a person is asked about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedWrite {
    /// The tool (`file_write`, `file_edit`).
    pub tool: String,
    /// The path as the call named it.
    pub path: String,
    /// Why it is protected: "`.git/hooks/pre-commit` is in `.git`, which git loads and runs …".
    pub reason: String,
    /// What the write will change: the call's preview, as the tool's
    /// [`Tool::preview`](crate::Tool::preview) builds it for any consent question (a
    /// diff against the current file). Untrusted text (from the model and the file):
    /// a terminal shows it escaped.
    pub preview: CallPreview,
}

/// Answers whether a protected write may go ahead (see the module docs).
#[async_trait]
pub trait ProtectedWriteConsent: Send + Sync {
    /// `true` when the person allowed this one write.
    async fn allow(&self, write: &ProtectedWrite) -> bool;
}

impl fmt::Debug for dyn ProtectedWriteConsent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProtectedWriteConsent")
    }
}
