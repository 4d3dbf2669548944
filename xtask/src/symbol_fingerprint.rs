//! What decides the names in `crates/cli/symbol-order.txt`, as a fingerprint CI can
//! compute without a release build.
//!
//! A mangled name carries a hash of its crate's `-C metadata`, which cargo derives
//! from the package (name, version, source), its enabled features, the profile
//! (opt-level, LTO, codegen units, debug info, …), the target, the toolchain
//! (`rustc -vV`) and the same of every dependency, not from the source text (cargo's
//! `compute_metadata`, `compilation_files.rs`; RUSTFLAGS go into file names only). So
//! the fingerprint is, each hashed on its own so that a change can be named:
//!
//! - **dependencies**: `cargo tree -p oxydra-cli -e normal,build` for the host, each
//!   package once with its version, source and enabled features (what Cargo.lock
//!   resolves for the binary, not the workspace's other packages); path packages are
//!   named relative to the workspace root, so the checkout's place does not count;
//! - **features**: oxydra-cli's own enabled features (the first line of that tree);
//! - **release profile**: the `[profile.release]` and `[profile.release.package.*]`
//!   tables of the root `Cargo.toml`, without comments and blank lines;
//! - **toolchain**: `rustc -vV` and `cargo -V`.
//!
//! What the fingerprint cannot see is the code: a function renamed, moved or added on
//! the run's path. [`crate::symbol_coverage`] covers that.

use std::path::Path;
use std::process::Command;

/// The fingerprint's parts, each a 64-bit FNV-1a hash in hex.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    pub(crate) dependencies: String,
    pub(crate) features: String,
    pub(crate) release_profile: String,
    pub(crate) toolchain: String,
}

/// Each part: its key in the stamp, and what to say when it changed.
pub(crate) const PARTS: [(&str, &str); 4] = [
    (
        "dependencies",
        "Cargo.lock's packages for oxydra-cli (a version, a source or a feature of a \
         dependency)",
    ),
    ("features", "oxydra-cli's enabled features"),
    (
        "release_profile",
        "the release profile ([profile.release] or [profile.release.package.*] in \
         Cargo.toml)",
    ),
    ("toolchain", "the toolchain (`rustc -vV`, `cargo -V`)"),
];

impl Fingerprint {
    /// The fingerprint of the workspace at `root`, as it is now (runs `cargo tree`,
    /// `rustc -vV` and `cargo -V`: a second or two, no build).
    pub(crate) fn now(root: &Path) -> Result<Self, String> {
        let tree = output(
            root,
            "cargo",
            &[
                "tree",
                "--locked",
                "-p",
                "oxydra-cli",
                "-e",
                "normal,build",
                "--prefix",
                "none",
                "-f",
                "{p} {f}",
            ],
        )?;
        let manifest = root.join("Cargo.toml");
        let cargo_toml = std::fs::read_to_string(&manifest)
            .map_err(|e| format!("{}: {e}", manifest.display()))?;
        let toolchain = format!(
            "{}\n{}",
            output(root, "rustc", &["-vV"])?,
            output(root, "cargo", &["-V"])?
        );
        let root_text = root.display().to_string();
        Ok(Self::of(&tree, &root_text, &cargo_toml, &toolchain))
    }

    /// The fingerprint of these inputs: `tree` as `cargo tree --prefix none -f "{p}
    /// {f}"` prints it (the root package first) in a workspace at `root`.
    pub(crate) fn of(tree: &str, root: &str, cargo_toml: &str, toolchain: &str) -> Self {
        let (package, dependencies) = normalize_tree(tree, root);
        Self {
            dependencies: fnv1a(&dependencies.join("\n")),
            features: fnv1a(&package),
            release_profile: fnv1a(&release_profile(cargo_toml)),
            toolchain: fnv1a(toolchain.trim()),
        }
    }

    /// The part named `key` (one of [`PARTS`]).
    pub(crate) fn part(&self, key: &str) -> Option<&str> {
        match key {
            "dependencies" => Some(&self.dependencies),
            "features" => Some(&self.features),
            "release_profile" => Some(&self.release_profile),
            "toolchain" => Some(&self.toolchain),
            _ => None,
        }
    }
}

/// Runs `program args` in `root`; its standard output, or what failed.
fn output(root: &Path, program: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(root)
        .output()
        .map_err(|e| format!("{program}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The tree's root line and the sorted dependency lines, each package once, with the
/// workspace root cut from path packages' sources and `(*)` (seen before) dropped.
fn normalize_tree(tree: &str, root: &str) -> (String, Vec<String>) {
    let mut lines = tree
        .lines()
        .map(|line| {
            line.replace(root, ".")
                .replace(" (*)", "")
                .trim()
                .to_owned()
        })
        .filter(|line| !line.is_empty());
    let package = lines.next().unwrap_or_default();
    let mut dependencies: Vec<String> = lines.collect();
    dependencies.sort();
    dependencies.dedup();
    (package, dependencies)
}

/// The `[profile.release]` and `[profile.release.package.*]` tables of a manifest,
/// their lines trimmed, without comments and blank lines.
fn release_profile(cargo_toml: &str) -> String {
    let mut inside = false;
    let mut kept = Vec::new();
    for line in cargo_toml.lines() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.starts_with('[') {
            inside = line == "[profile.release]" || line.starts_with("[profile.release.");
        }
        if inside && !line.is_empty() {
            kept.push(line);
        }
    }
    kept.join("\n")
}

/// 64-bit FNV-1a of `text`, in hex: stable across toolchains and machines (std's
/// `DefaultHasher` promises neither).
fn fnv1a(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TREE: &str = "\
oxydra-cli v0.1.0 (/src/oxy/crates/cli) default,local
oxydra-runtime v0.1.0 (/src/oxy/crates/runtime)
serde v1.0.228 derive,std
serde_derive v1.0.228 (proc-macro)
serde v1.0.228 derive,std (*)
";

    const MANIFEST: &str = "\
[workspace]
members = [\"crates/*\"]

[profile.dev]
debug = 1

[profile.release]
lto = \"fat\" # the whole program
opt-level = \"s\"

[profile.release.package.memchr]
opt-level = 3

[profile.bench]
debug = 1
";

    fn fingerprint(tree: &str, root: &str, manifest: &str, toolchain: &str) -> Fingerprint {
        Fingerprint::of(tree, root, manifest, toolchain)
    }

    #[test]
    fn the_checkouts_place_comments_and_order_do_not_count() {
        let here = fingerprint(TREE, "/src/oxy", MANIFEST, "rustc 1.95.0");
        let moved = TREE.replace("/src/oxy", "/home/ci/work");
        let reordered = format!(
            "{}\nserde_derive v1.0.228 (proc-macro)\nserde v1.0.228 derive,std\n\
             oxydra-runtime v0.1.0 (/home/ci/work/crates/runtime)\n",
            moved.lines().next().unwrap()
        );
        let commented = MANIFEST.replace("# the whole program", "# all of it");
        assert_eq!(
            here,
            fingerprint(&reordered, "/home/ci/work", &commented, "rustc 1.95.0\n")
        );
        assert_eq!(
            release_profile(MANIFEST),
            "[profile.release]\nlto = \"fat\"\nopt-level = \"s\"\n\
             [profile.release.package.memchr]\nopt-level = 3"
        );
    }

    #[test]
    fn each_input_changes_its_own_part_only() {
        let base = fingerprint(TREE, "/src/oxy", MANIFEST, "rustc 1.95.0");
        let bumped = fingerprint(
            &TREE.replace("serde v1.0.228 derive,std\n", "serde v1.0.229 derive,std\n"),
            "/src/oxy",
            MANIFEST,
            "rustc 1.95.0",
        );
        assert_ne!(bumped.dependencies, base.dependencies);
        assert_eq!(
            (&bumped.features, &bumped.release_profile, &bumped.toolchain),
            (&base.features, &base.release_profile, &base.toolchain)
        );
        let featured = fingerprint(
            &TREE.replace("default,local", "default"),
            "/src/oxy",
            MANIFEST,
            "rustc 1.95.0",
        );
        assert_ne!(featured.features, base.features);
        assert_eq!(featured.dependencies, base.dependencies);
        let profiled = fingerprint(
            TREE,
            "/src/oxy",
            &MANIFEST.replace("opt-level = 3", "opt-level = 2"),
            "rustc 1.95.0",
        );
        assert_ne!(profiled.release_profile, base.release_profile);
        // Another profile's change is not the release profile's.
        let dev = fingerprint(
            TREE,
            "/src/oxy",
            &MANIFEST.replace(
                "debug = 1\n\n[profile.release]",
                "debug = 2\n\n[profile.release]",
            ),
            "rustc 1.95.0",
        );
        assert_eq!(dev, base);
        let toolchain = fingerprint(TREE, "/src/oxy", MANIFEST, "rustc 1.96.0");
        assert_ne!(toolchain.toolchain, base.toolchain);
        for (key, _) in PARTS {
            assert!(base.part(key).is_some(), "{key}");
        }
    }

    #[test]
    fn fnv1a_is_the_published_function() {
        // FNV-1a 64 test vectors (the empty string and "a").
        assert_eq!(fnv1a(""), "cbf29ce484222325");
        assert_eq!(fnv1a("a"), "af63dc4c8601ec8c");
    }

    /// The workspace's real manifest has a release profile to fingerprint.
    #[test]
    fn the_workspace_release_profile_is_found() {
        let manifest = crate::workspace_root().join("Cargo.toml");
        let text = std::fs::read_to_string(manifest).unwrap();
        let profile = release_profile(&text);
        assert!(profile.starts_with("[profile.release]"), "{profile}");
        assert!(profile.contains("lto = \"fat\""), "{profile}");
        assert!(!profile.contains("[profile.bench]"), "{profile}");
    }
}
