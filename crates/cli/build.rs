//! Link settings of the `oxydra` binary.
//!
//! - On Linux with glibc, the binary is linked with `-z pack-relative-relocs`: its
//!   relative relocations (most of them: pointers in statics such as vtables and string
//!   tables) are stored as DT_RELR bitmaps instead of 24-byte `Elf64_Rela` entries, so
//!   that every start reads a few KB of relocations instead of over a megabyte. The
//!   executable stays position-independent (ASLR kept). It needs GNU ld ≥ 2.38 or lld,
//!   and a glibc ≥ 2.36 where the binary runs; `OXYDRA_NO_PACKED_RELOCS=1` at build
//!   time links without it (for a binary that must run on an older glibc).
//! - In release builds for x86-64 Linux with glibc (linked by rust-lld, Rust's default
//!   there since 1.90), the functions a run executes are placed together:
//!   `symbol-order.txt` lists them (recorded by `cargo xtask symbol-order` from a run of
//!   the 20-turn scenario under callgrind) and lld's `--symbol-ordering-file` lays
//!   them out first. Linux maps a binary's code 64 KB around each page a process
//!   touches; the ~4,000 functions of a run were spread over all 20 MB of code, and
//!   14 of the run's 23.6 MiB peak RSS were the binary's code pages. Grouped, they are
//!   3.5 MiB. A name the list has and the binary lacks (code changed since it was
//!   recorded) is skipped without a warning: a stale list only groups less. The list
//!   goes to lld through `build/ordering_file.rs`, which adds, beside each name that
//!   ends in a fat-LTO counter (`….7466`), the neighbouring counters, so that the
//!   small renames of later commits still find their functions.
//!   `OXYDRA_NO_SYMBOL_ORDER=1` at build time links without it (for a linker other
//!   than lld, which does not know the option).
//!
//! See docs/performance.md ("Against rig").

#[path = "build/ordering_file.rs"]
mod ordering_file;

fn main() {
    println!("cargo:rerun-if-env-changed=OXYDRA_NO_PACKED_RELOCS");
    println!("cargo:rerun-if-env-changed=OXYDRA_NO_SYMBOL_ORDER");
    println!("cargo:rerun-if-changed=symbol-order.txt");
    println!("cargo:rerun-if-changed=build/ordering_file.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if linux_gnu && var("OXYDRA_NO_PACKED_RELOCS").is_empty() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    let x86_64 = var("CARGO_CFG_TARGET_ARCH") == "x86_64";
    let release = var("PROFILE") == "release";
    if linux_gnu && x86_64 && release && var("OXYDRA_NO_SYMBOL_ORDER").is_empty() {
        let order = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("symbol-order.txt");
        if order.is_file() {
            match write_ordering_file(&order, &var("OUT_DIR")) {
                Ok(file) => {
                    println!(
                        "cargo:rustc-link-arg-bin=oxydra=-Wl,--symbol-ordering-file={}",
                        file.display()
                    );
                    println!("cargo:rustc-link-arg-bin=oxydra=-Wl,--no-warn-symbol-ordering");
                }
                Err(error) => {
                    println!("cargo:warning=linking without the symbol order: {error}");
                }
            }
        }
    }
}

/// Writes lld's ordering file for the recorded `list` into `out_dir`
/// ([`ordering_file::expand`]) and returns its path.
fn write_ordering_file(
    list: &std::path::Path,
    out_dir: &str,
) -> Result<std::path::PathBuf, String> {
    let text = std::fs::read_to_string(list).map_err(|e| format!("{}: {e}", list.display()))?;
    let file = std::path::Path::new(out_dir).join("symbol-ordering-file.txt");
    std::fs::write(
        &file,
        ordering_file::expand(&text, ordering_file::COUNTER_DRIFT),
    )
    .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(file)
}
