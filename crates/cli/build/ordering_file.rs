//! The ordering file `build.rs` hands lld (`--symbol-ordering-file`), written from
//! `symbol-order.txt` so that a list recorded a few commits ago still names the
//! functions it recorded.
//!
//! Fat LTO renames local symbols that clash by appending a counter: one copy of
//! `Hir::class` is `…Hir5class17h…E.7466` in one build and `….7467` in the next, once
//! a single function was added anywhere before it in the module. lld matches names
//! exactly and skips the ones a binary lacks, so each such shift put a function the
//! run executes back among the cold code, and the 64 KB Linux maps around each page it
//! touches became resident: measured on 2026-12-02, ten shifted counters and one new
//! function cost 1.4 MB of the run's peak RSS (docs/performance.md, "LTO counters in
//! the symbol order"). Each listed Rust name that ends in such a counter is therefore
//! followed by the same name with every counter up to [`COUNTER_DRIFT`] either side.
//! A counter that names another copy of the same function only places that copy
//! among the run's code (a few hundred bytes); a name the binary lacks is skipped.

use std::collections::HashSet;

/// How far either way of the recorded counter a renamed local symbol is looked for.
pub const COUNTER_DRIFT: u64 = 256;

/// The ordering file for `list` (one name a line, as `cargo xtask symbol-order`
/// writes it): each name once, in the list's order, every counted Rust name followed
/// by its neighbours within `drift`. Lines that are no symbol of the binary
/// (callgrind's `'2` marks of a recursion's deeper levels, `(below main)`) are left
/// out.
pub fn expand(list: &str, drift: u64) -> String {
    let mut seen = HashSet::new();
    let mut out = String::with_capacity(list.len() * 4);
    let mut push = |name: &str, out: &mut String| {
        if seen.insert(name.to_owned()) {
            out.push_str(name);
            out.push('\n');
        }
    };
    for name in list.lines().map(str::trim) {
        if name.is_empty() || name.contains('\'') || name.contains(' ') {
            continue;
        }
        push(name, &mut out);
        if let Some((stem, counter)) = lto_counter(name) {
            let (low, high) = (counter.saturating_sub(drift), counter.saturating_add(drift));
            for neighbour in low..=high {
                push(&format!("{stem}.{neighbour}"), &mut out);
            }
        }
    }
    out
}

/// A Rust symbol (`_ZN…` or `_R…`) that ends in an LTO counter (`.` and digits): its
/// stem and the counter. C symbols keep their suffixes (`.constprop.0`, `.isra.0` are
/// GCC's, fixed by the C source, not counters).
fn lto_counter(name: &str) -> Option<(&str, u64)> {
    if !(name.starts_with("_ZN") || name.starts_with("_R")) {
        return None;
    }
    let (stem, digits) = name.rsplit_once('.')?;
    if stem.is_empty() || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((stem, digits.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counted_rust_name_is_followed_by_its_neighbours_and_others_stay_as_they_are() {
        let list = "_ZN5regex3Hir5class17h0d41eedb27475338E.7466\n\
                    _RNvNtCs1_4core3fmt5write.3\n\
                    _ZN6oxydra4main17h0123456789abcdefE\n\
                    btreeNext.constprop.0\n\
                    sqlite3_step\n";
        let file = expand(list, 2);
        let lines: Vec<&str> = file.lines().collect();
        assert_eq!(
            lines,
            [
                "_ZN5regex3Hir5class17h0d41eedb27475338E.7466",
                "_ZN5regex3Hir5class17h0d41eedb27475338E.7464",
                "_ZN5regex3Hir5class17h0d41eedb27475338E.7465",
                "_ZN5regex3Hir5class17h0d41eedb27475338E.7467",
                "_ZN5regex3Hir5class17h0d41eedb27475338E.7468",
                "_RNvNtCs1_4core3fmt5write.3",
                "_RNvNtCs1_4core3fmt5write.1",
                "_RNvNtCs1_4core3fmt5write.2",
                "_RNvNtCs1_4core3fmt5write.4",
                "_RNvNtCs1_4core3fmt5write.5",
                "_ZN6oxydra4main17h0123456789abcdefE",
                "btreeNext.constprop.0",
                "sqlite3_step",
            ]
        );
    }

    #[test]
    fn overlapping_ranges_name_each_symbol_once_where_it_first_comes() {
        let file = expand("_RNvCs1_1a1f.10\n_RNvCs1_1a1f.11\n_RNvCs1_1a1f.0\n", 1);
        let lines: Vec<&str> = file.lines().collect();
        assert_eq!(
            lines,
            [
                "_RNvCs1_1a1f.10",
                "_RNvCs1_1a1f.9",
                "_RNvCs1_1a1f.11",
                "_RNvCs1_1a1f.12",
                "_RNvCs1_1a1f.0",
                "_RNvCs1_1a1f.1",
            ]
        );
    }

    #[test]
    fn callgrind_marks_and_names_that_are_no_symbol_are_left_out() {
        let file = expand(
            "(below main)\nsqlite3Prepare'2\n\n  _ZN1a1bE  \n_ZN1a1bE\n.5\n_R.\n",
            1,
        );
        // `.5` has no stem and `_R.` no counter: both kept as they are, never expanded.
        assert_eq!(file, "_ZN1a1bE\n.5\n_R.\n");
    }

    #[test]
    fn the_committed_list_keeps_its_names_in_order_and_adds_only_counted_neighbours() {
        let list = include_str!("../symbol-order.txt");
        let file = expand(list, COUNTER_DRIFT);
        let written: Vec<&str> = file.lines().collect();
        let kept: Vec<&str> = list
            .lines()
            .filter(|name| !name.contains('\'') && !name.contains(' '))
            .collect();
        let counted = kept
            .iter()
            .filter(|name| lto_counter(name).is_some())
            .count();
        assert!(counted > 0, "the list has no LTO counter: is it fat LTO's?");
        // Each counted name brings at most 2 × drift neighbours, and nothing else is added.
        let bound = usize::try_from(2 * COUNTER_DRIFT).unwrap() * counted;
        assert!(written.len() <= kept.len() + bound);
        let position = |name: &str| written.iter().position(|line| *line == name);
        let positions: Vec<usize> = kept.iter().map(|name| position(name).unwrap()).collect();
        assert!(positions.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn a_counter_too_large_to_read_is_kept_as_written() {
        let name = "_RNvCs1_1a1f.99999999999999999999999";
        assert_eq!(expand(name, 3), format!("{name}\n"));
        let top = format!("_RNvCs1_1a1f.{}", u64::MAX);
        assert_eq!(expand(&top, 1).lines().count(), 2);
    }
}
