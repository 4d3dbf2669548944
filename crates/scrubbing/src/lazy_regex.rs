//! A built-in regular expression compiled the first time it is needed.
//!
//! Most built-in patterns run only when their literal trigger occurs in the text
//! (`keyword_patterns`), and most texts a run scrubs hold none of the triggers:
//! compiling all of them up front cost a quarter of the instructions of a 20-turn
//! `oxydra run` (docs/performance.md). A pattern that fails to compile makes the
//! scrub that needed it fail closed ([`Unavailable`]: the text is withheld), as a
//! failure of the whole set did when it was compiled at once.

use std::sync::OnceLock;

use regex::Regex;

/// A built-in pattern that did not compile: the scrub that needed it withholds the
/// text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unavailable;

/// A regular expression and its source, compiled on first use.
#[derive(Debug)]
pub(crate) struct LazyRegex {
    source: String,
    compiled: OnceLock<Option<Regex>>,
}

impl LazyRegex {
    pub(crate) fn new(source: impl Into<String>) -> Self {
        Self {
            source: source.into(),
            compiled: OnceLock::new(),
        }
    }

    /// The compiled expression; compiles it on the first call.
    pub(crate) fn get(&self) -> Result<&Regex, Unavailable> {
        self.compiled
            .get_or_init(|| Regex::new(&self.source).ok())
            .as_ref()
            .ok_or(Unavailable)
    }

    /// Whether it has been compiled (by an earlier [`LazyRegex::get`]).
    #[cfg(test)]
    pub(crate) fn is_compiled(&self) -> bool {
        self.compiled.get().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_once_on_first_use() {
        let lazy = LazyRegex::new(r"\d+");
        assert!(!lazy.is_compiled());
        let first = lazy.get().unwrap() as *const Regex;
        assert!(lazy.is_compiled());
        assert_eq!(lazy.get().unwrap() as *const Regex, first);
        assert!(lazy.get().unwrap().is_match("a1"));
    }

    #[test]
    fn a_pattern_that_does_not_compile_is_unavailable_every_time() {
        let lazy = LazyRegex::new(r"(unclosed");
        assert_eq!(lazy.get().err(), Some(Unavailable));
        assert_eq!(lazy.get().err(), Some(Unavailable));
    }
}
