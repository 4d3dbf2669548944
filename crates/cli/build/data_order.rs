//! The linker script `build.rs` hands lld for the read-only data a run reads
//! (`data-order.txt`, recorded by `cargo xtask symbol-order`).
//!
//! Every constant of ours is an input section of its own (`.rodata..Lanon.…` for a
//! Rust constant, `.rodata.<function>` for a function's jump table, `.rodata.<name>`
//! for a C table), and lld lays them out in the order it reads them, so the ~120 KB a
//! run reads were spread over 1.5 MB of the 4.5 MB `.rodata`; Linux maps 64 KB around
//! each page a process touches, and all of it became resident. The script gathers the
//! listed sections into an output section of their own, `.rodata.hot`, placed before
//! `.rodata` (`INSERT BEFORE`, so lld's default layout is otherwise kept). The
//! function list cannot do this: lld's `--symbol-ordering-file` places a section by a
//! symbol in it, and a Rust constant's label (`.Lanon.…`) is not in the symbol table.
//! A listed name the binary lacks matches nothing and costs nothing.

/// The linker script for `list` (one input-section name a line). Names with a
/// character a script pattern would read as syntax or a wildcard are left out, as is
/// the bare `.rodata` (it would match every file's unnamed read-only data).
pub fn linker_script(list: &str) -> String {
    let mut out = String::from("SECTIONS\n{\n  .rodata.hot : {\n");
    for name in list.lines().map(str::trim) {
        let plain = name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$'));
        if name.starts_with(".rodata.") && plain {
            out.push_str("    *(");
            out.push_str(name);
            out.push_str(")\n");
        }
    }
    out.push_str("  }\n}\nINSERT BEFORE .rodata;\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_listed_section_gets_a_line_of_its_own_in_the_lists_order() {
        let script = linker_script(
            ".rodata..Lanon.51d979bc.2617\n\
             .rodata._ZN4core3fmt3num3imp$LT$impl$GT$17h0E\n\
             \n\
             .rodata.yy_action\n",
        );
        assert_eq!(
            script,
            "SECTIONS\n{\n  .rodata.hot : {\n\
             \x20   *(.rodata..Lanon.51d979bc.2617)\n\
             \x20   *(.rodata._ZN4core3fmt3num3imp$LT$impl$GT$17h0E)\n\
             \x20   *(.rodata.yy_action)\n\
             \x20 }\n}\nINSERT BEFORE .rodata;\n"
        );
    }

    #[test]
    fn a_name_that_would_be_script_syntax_or_match_more_is_left_out() {
        // A list edited by hand, or written by something else: wildcards, a closing
        // parenthesis or brace, a comment, a space, another output section, the bare
        // `.rodata` of every object.
        let script = linker_script(
            ".rodata.*\n.rodata.a)\n.rodata.}\n.rodata./*\n.rodata.a b\n.text.main\n\
             .rodata\n.rodata.ok\n",
        );
        let placed: Vec<&str> = script
            .lines()
            .filter(|line| line.trim_start().starts_with("*("))
            .collect();
        assert_eq!(placed, ["    *(.rodata.ok)"]);
        assert!(script.ends_with("INSERT BEFORE .rodata;\n"));
    }

    #[test]
    fn the_committed_list_is_placed_whole() {
        let list = include_str!("../data-order.txt");
        let script = linker_script(list);
        let placed = script
            .lines()
            .filter(|line| line.trim_start().starts_with("*("))
            .count();
        assert!(placed > 0);
        assert_eq!(placed, list.lines().count());
    }

    #[test]
    fn an_empty_list_makes_an_empty_section() {
        assert_eq!(
            linker_script(""),
            "SECTIONS\n{\n  .rodata.hot : {\n  }\n}\nINSERT BEFORE .rodata;\n"
        );
    }
}
