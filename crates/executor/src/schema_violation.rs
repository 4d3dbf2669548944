//! One way a call's arguments break its tool's schema: what the validation guard finds
//! and the error of a refused call carries.

/// One way the arguments break the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolation {
    /// Where, as a JSONPath (`$`, `$.path`, `$.items[2].name`).
    pub path: String,
    /// The schema keyword that failed (`required`, `type`, `enum`, …).
    pub keyword: String,
    /// The validator's message.
    pub message: String,
    /// What the schema wanted, when it can be said briefly.
    pub expected: Option<String>,
    /// The value found there (compact JSON, shortened).
    pub found: String,
}

impl std::fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "at {}: {} (keyword: {}",
            self.path, self.message, self.keyword
        )?;
        if let Some(expected) = &self.expected {
            write!(f, "; expected: {expected}")?;
        }
        write!(f, "; found: {})", self.found)
    }
}
