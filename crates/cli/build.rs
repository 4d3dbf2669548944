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
//! - In the same builds, the read-only data a run reads is placed together the same
//!   way: `data-order.txt` lists the input sections that hold it (recorded by the same
//!   command, from a run under valgrind's lackey), and `build/data_order.rs` writes a
//!   linker script that gathers them into `.rodata.hot` before `.rodata`. The link
//!   also writes lld's map (`oxydra.map` in the build script's output directory),
//!   from which the recording names the sections. `OXYDRA_NO_SYMBOL_ORDER=1` leaves
//!   out both.
//!
//! See docs/performance.md ("Against rig").

#[path = "build/data_order.rs"]
mod data_order;
#[path = "build/ordering_file.rs"]
mod ordering_file;

fn main() {
    println!("cargo:rerun-if-env-changed=OXYDRA_NO_PACKED_RELOCS");
    println!("cargo:rerun-if-env-changed=OXYDRA_NO_SYMBOL_ORDER");
    println!("cargo:rerun-if-changed=symbol-order.txt");
    println!("cargo:rerun-if-changed=build/ordering_file.rs");
    println!("cargo:rerun-if-changed=data-order.txt");
    println!("cargo:rerun-if-changed=build/data_order.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if linux_gnu && var("OXYDRA_NO_PACKED_RELOCS").is_empty() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    let x86_64 = var("CARGO_CFG_TARGET_ARCH") == "x86_64";
    let release = var("PROFILE") == "release";
    if linux_gnu && x86_64 && release && var("OXYDRA_NO_SYMBOL_ORDER").is_empty() {
        // What `cargo xtask symbol-order` names the data sections from.
        println!(
            "cargo:rustc-link-arg-bin=oxydra=-Wl,-Map={}",
            std::path::Path::new(&var("OUT_DIR"))
                .join("oxydra.map")
                .display()
        );
        let manifest_dir = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).to_path_buf();
        let out_dir = std::path::Path::new(&var("OUT_DIR")).to_path_buf();
        link_with(
            &manifest_dir.join("symbol-order.txt"),
            &out_dir.join("symbol-ordering-file.txt"),
            "the symbol order",
            |list| ordering_file::expand(list, ordering_file::COUNTER_DRIFT),
            |file| {
                vec![
                    format!("-Wl,--symbol-ordering-file={}", file.display()),
                    "-Wl,--no-warn-symbol-ordering".to_owned(),
                ]
            },
        );
        link_with(
            &manifest_dir.join("data-order.txt"),
            &out_dir.join("data-order.ld"),
            "the data order",
            data_order::linker_script,
            |file| vec![format!("-Wl,-T,{}", file.display())],
        );
    }
}

/// When the recorded `list` exists, writes what `write` makes of it to `file` and
/// links the `oxydra` binary with the `args` that name it; a list that cannot be read
/// or a file that cannot be written is a warning (`what` says which), and the binary
/// is linked without it.
fn link_with(
    list: &std::path::Path,
    file: &std::path::Path,
    what: &str,
    write: impl Fn(&str) -> String,
    args: impl Fn(&std::path::Path) -> Vec<String>,
) {
    if !list.is_file() {
        return;
    }
    let written = std::fs::read_to_string(list)
        .map_err(|e| format!("{}: {e}", list.display()))
        .and_then(|text| {
            std::fs::write(file, write(&text)).map_err(|e| format!("{}: {e}", file.display()))
        });
    match written {
        Ok(()) => {
            for arg in args(file) {
                println!("cargo:rustc-link-arg-bin=oxydra={arg}");
            }
        }
        Err(error) => println!("cargo:warning=linking without {what}: {error}"),
    }
}
