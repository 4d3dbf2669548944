//! Link settings of the `oxydra` binary.
//!
//! On Linux with glibc, the binary is linked with `-z pack-relative-relocs`: its
//! relative relocations (most of them: pointers in statics such as vtables and string
//! tables) are stored as DT_RELR bitmaps instead of 24-byte `Elf64_Rela` entries, so
//! that every start reads a few KB of relocations instead of over a megabyte. The
//! executable stays position-independent (ASLR kept). It needs GNU ld ≥ 2.38 or lld,
//! and a glibc ≥ 2.36 where the binary runs; `OXYDRA_NO_PACKED_RELOCS=1` at build
//! time links without it (for a binary that must run on an older glibc).
//! See docs/performance.md ("Against rig").

fn main() {
    println!("cargo:rerun-if-env-changed=OXYDRA_NO_PACKED_RELOCS");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    let opted_out = !var("OXYDRA_NO_PACKED_RELOCS").is_empty();
    if linux_gnu && !opted_out {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
