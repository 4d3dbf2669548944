//! How much of what a run executes the symbol order still names: of the functions of
//! our own crates (`oxydra`, `oxydra_*`) that the **debug** scenario run executes (the
//! cost guard's profile, demangled, hashes cut), the share whose path is among the
//! paths of `crates/cli/symbol-order.txt` (its mangled names read back by
//! [`crate::legacy_demangle`]).
//!
//! The release binary inlines many small functions a debug one calls, so the share is
//! well below 100% even for a list recorded a minute ago; what tells that the list has
//! gone stale is the share **falling** below the one recorded with it
//! ([`crate::symbol_stamp`]): functions renamed, moved or added on the run's path are
//! executed under paths the list does not have.

use std::collections::BTreeSet;

use crate::callgrind::{Profile, stable_name};
use crate::legacy_demangle::demangle;

/// What share of the run's own functions the list names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Coverage {
    /// Functions of our crates the run executed (each path once).
    pub(crate) executed: usize,
    /// Of those, the ones the list names.
    pub(crate) listed: usize,
    /// Up to ten executed functions the list does not name, for the message.
    pub(crate) missing: Vec<String>,
}

impl Coverage {
    /// `listed / executed` in percent (0 when nothing of ours ran).
    pub(crate) fn percent(&self) -> f64 {
        if self.executed == 0 {
            0.0
        } else {
            self.listed as f64 * 100.0 / self.executed as f64
        }
    }
}

/// Whether a demangled path is a function of our own crates: its first path element,
/// after any `<` or `&` of an impl's self type, is `oxydra` or `oxydra_…`.
pub(crate) fn is_ours(path: &str) -> bool {
    let path = path.trim_start_matches(['<', '&', '*']);
    let path = path.strip_prefix("mut ").unwrap_or(path);
    let path = path.strip_prefix("dyn ").unwrap_or(path);
    path.starts_with("oxydra::") || path.starts_with("oxydra_")
}

/// The paths of the list's names (mangled, one a line) that are ours.
pub(crate) fn listed_paths(list: &str) -> BTreeSet<String> {
    list.lines()
        .filter_map(|line| demangle(line.trim()))
        .filter(|path| is_ours(path))
        .collect()
}

/// The coverage of `profile` (demangled by callgrind) by the list's `paths`.
pub(crate) fn coverage(profile: &Profile, paths: &BTreeSet<String>) -> Coverage {
    let executed: BTreeSet<String> = profile
        .functions
        .keys()
        .map(|function| stable_name(&function.name))
        .filter(|path| is_ours(path))
        .collect();
    let missing: Vec<&String> = executed.difference(paths).collect();
    Coverage {
        executed: executed.len(),
        listed: executed.len() - missing.len(),
        missing: missing.into_iter().take(10).cloned().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callgrind;

    #[test]
    fn ours_are_told_apart_by_their_first_element() {
        assert!(is_ours("oxydra::main"));
        assert!(is_ours("oxydra_runtime::agent::Agent::run"));
        assert!(is_ours(
            "<oxydra_provider::request::ToolChoice as oxydra_runtime::Policy>::choose"
        ));
        assert!(is_ours("<&mut oxydra_types::X as core::fmt::Debug>::fmt"));
        assert!(!is_ours("<alloc::vec::Vec<T> as oxydra_types::Trait>::f"));
        assert!(!is_ours("core::ptr::drop_in_place<oxydra::Thing>"));
        assert!(!is_ours("oxydrax::main"));
        assert!(!is_ours("memcpy"));
    }

    #[test]
    fn the_share_of_our_executed_functions_the_list_names() {
        let profile = callgrind::parse(
            "\
events: Ir
ob=(1) /opt/app/oxydra
fn=(1) oxydra::main::h0123456789abcdef
1 10
fn=(2) oxydra_runtime::turn::h0123456789abcdef
1 10
fn=(3) oxydra_runtime::renamed_turn::h0123456789abcdef
1 10
fn=(4) oxydra_runtime::turn::h1111111111111111
1 10
fn=(5) core::ptr::drop_in_place::h0123456789abcdef
1 10
",
        )
        .unwrap();
        let list = "\
_ZN6oxydra4main17h0123456789abcdefE
_ZN14oxydra_runtime4turn17haaaaaaaaaaaaaaaaE
_ZN4core3ptr13drop_in_place17h0123456789abcdefE
memcpy
";
        let paths = listed_paths(list);
        assert_eq!(paths.len(), 2, "{paths:?}");
        let coverage = coverage(&profile, &paths);
        // Two instances of `turn` are one path; `drop_in_place` is not ours.
        assert_eq!(coverage.executed, 3);
        assert_eq!(coverage.listed, 2);
        assert_eq!(coverage.missing, ["oxydra_runtime::renamed_turn"]);
        assert!((coverage.percent() - 200.0 / 3.0).abs() < 1e-9);
        let none = super::coverage(&Profile::default(), &paths);
        assert_eq!(none.percent(), 0.0);
    }
}
