//! A deterministic corpus of secrets in many formats, and of hard negatives.
//!
//! Every positive case knows the byte ranges of its secret(s) and the label that must
//! stay visible; every negative case is text that must come back unchanged.

pub mod formats_config;
pub mod formats_wire;
pub mod helpers;
pub mod negatives;
pub mod positives;
pub mod values;

use std::ops::Range;

/// One generated document.
#[derive(Debug, Clone)]
pub struct Case {
    pub family: &'static str,
    pub format: &'static str,
    pub text: String,
    /// Byte ranges of the secret in `text` (several when it is split).
    pub secrets: Vec<Range<usize>>,
    /// Text that must still be in the output (the key naming the secret).
    pub labels: Vec<String>,
}

/// Builds a [`Case`] piece by piece.
#[derive(Debug, Default)]
pub struct Doc {
    text: String,
    secrets: Vec<Range<usize>>,
    labels: Vec<String>,
}

impl Doc {
    pub fn new() -> Self {
        Self::default()
    }

    /// Plain text.
    pub fn t(mut self, text: &str) -> Self {
        self.text.push_str(text);
        self
    }

    /// A label: plain text that must survive scrubbing.
    pub fn l(mut self, label: &str) -> Self {
        self.text.push_str(label);
        self.labels.push(label.to_owned());
        self
    }

    /// Secret text: must be covered by redactions.
    pub fn s(mut self, secret: &str) -> Self {
        let start = self.text.len();
        self.text.push_str(secret);
        self.secrets.push(start..self.text.len());
        self
    }

    pub fn case(self, family: &'static str, format: &'static str) -> Case {
        Case {
            family,
            format,
            text: self.text,
            secrets: self.secrets,
            labels: self.labels,
        }
    }
}
