//! The CPU features code picks its paths by at run time (memchr, aho-corasick and the
//! hashers choose SIMD code by CPUID), as `/proc/cpuinfo` names them: the cost guard's
//! instruction counts are only comparable between machines that share them.
//!
//! Under callgrind the program does not see the host's CPUID but valgrind's: a
//! synthetic CPU with the host's level of the features valgrind can run (up to AVX2,
//! BMI and FMA). AVX-512 and the SHA extensions are never passed on, so a host's having
//! them changes nothing the guard counts: the same debug binary counted 1,734,735,720
//! Ir on an AVX-512 machine and 1,734,713,011 on one without (0.001% apart, 2026-11-30).
//! Only the features valgrind passes on are compared.

/// The flags that change which code runs under valgrind: the x86-64 SIMD and
/// bit-manipulation extensions libraries dispatch on and valgrind's synthetic CPU
/// offers when the host has them.
const DISPATCHED: &[&str] = &[
    "sse3",
    "ssse3",
    "sse4_1",
    "sse4_2",
    "popcnt",
    "avx",
    "avx2",
    "bmi1",
    "bmi2",
    "lzcnt",
    "fma",
    "aes",
    "pclmulqdq",
];

/// This machine's dispatched features, sorted (empty where `/proc/cpuinfo` cannot be
/// read or names none of them).
pub(crate) fn this_machine() -> Vec<String> {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|text| dispatched(&text))
        .unwrap_or_default()
}

/// The dispatched features of the first processor's `flags` line of `cpuinfo`.
fn dispatched(cpuinfo: &str) -> Vec<String> {
    let Some(flags) = cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "flags").then_some(value)
    }) else {
        return Vec::new();
    };
    let mut found: Vec<String> = flags
        .split_whitespace()
        .filter(|flag| DISPATCHED.contains(flag))
        .map(str::to_owned)
        .collect();
    found.sort();
    found.dedup();
    found
}

/// How `now` differs from `recorded`, in words; `None` when they are the same.
pub(crate) fn difference(recorded: &[String], now: &[String]) -> Option<String> {
    // A baseline recorded before a flag left the list may name it: it counts no more.
    let missing: Vec<&str> = recorded
        .iter()
        .filter(|flag| DISPATCHED.contains(&flag.as_str()) && !now.contains(flag))
        .map(String::as_str)
        .collect();
    let extra: Vec<&str> = now
        .iter()
        .filter(|flag| !recorded.contains(flag))
        .map(String::as_str)
        .collect();
    if missing.is_empty() && extra.is_empty() {
        return None;
    }
    Some(format!(
        "this machine lacks [{}] and adds [{}]",
        missing.join(" "),
        extra.join(" ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dispatched_flags_of_the_first_processor_are_kept_sorted() {
        let cpuinfo = "processor\t: 0\nflags\t\t: fpu avx2 sse4_2 vme avx2 bmi2\n\n\
                       processor\t: 1\nflags\t\t: fpu avx512f\n";
        assert_eq!(dispatched(cpuinfo), ["avx2", "bmi2", "sse4_2"]);
        // Valgrind never offers these to the program it runs: a host with them counts
        // the same instructions as one without.
        let cpuinfo = "processor\t: 0\nflags\t\t: avx2 avx512f avx512bw avx512vl sha_ni\n";
        assert_eq!(dispatched(cpuinfo), ["avx2"]);
        assert!(dispatched("processor\t: 0\n").is_empty());
    }

    #[test]
    fn a_difference_names_what_is_missing_and_what_is_added() {
        let recorded = vec!["avx".to_owned(), "avx2".to_owned()];
        assert_eq!(difference(&recorded, &recorded.clone()), None);
        let now = vec!["avx".to_owned(), "fma".to_owned()];
        let said = difference(&recorded, &now).unwrap();
        assert!(
            said.contains("lacks [avx2]") && said.contains("adds [fma]"),
            "{said}"
        );
        // A flag no longer compared, in an older baseline, is no difference.
        let older = vec!["avx".to_owned(), "sha_ni".to_owned()];
        assert_eq!(difference(&older, &["avx".to_owned()]), None);
    }
}
