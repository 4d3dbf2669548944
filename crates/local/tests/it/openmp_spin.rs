//! The spin count reaches libgomp before libgomp reads it, and a choice made in the
//! environment is left alone.
//!
//! libgomp prints the settings it read at start-up when `OMP_DISPLAY_ENV=verbose`:
//! each case runs this test binary again as a child with that set and reads what
//! libgomp itself says.

use std::process::Command;

use oxydra_local::openmp_spin::{DEFAULT_SPIN_COUNT, SPIN_COUNT_VAR, WAIT_POLICY_VAR};

/// What the child runs: nothing but the start-up (libgomp's constructor and ours).
#[test]
fn child_does_nothing() {
    // Keeps libgomp (through llama.cpp's decoding) linked into this binary.
    let _ = std::hint::black_box(oxydra_local::LocalProvider::load as *const ());
}

/// libgomp's start-up report of a child run with `env` set and the two variables
/// otherwise removed.
fn libgomp_report(env: &[(&str, &str)]) -> String {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe);
    child
        .args([
            "--exact",
            "openmp_spin::child_does_nothing",
            "--test-threads",
            "1",
        ])
        .env_remove(SPIN_COUNT_VAR)
        .env_remove(WAIT_POLICY_VAR)
        .env("OMP_DISPLAY_ENV", "verbose");
    for (key, value) in env {
        child.env(key, value);
    }
    let output = child.output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let report = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        report.contains("OPENMP DISPLAY ENVIRONMENT BEGIN"),
        "libgomp did not report its settings: {report}"
    );
    report
}

#[test]
fn libgomp_reads_the_short_spin_count_when_nothing_chose() {
    let report = libgomp_report(&[]);
    assert!(
        report.contains(&format!("GOMP_SPINCOUNT = '{DEFAULT_SPIN_COUNT}'")),
        "{report}"
    );
}

#[test]
fn a_spin_count_in_the_environment_wins() {
    let report = libgomp_report(&[(SPIN_COUNT_VAR, "77")]);
    assert!(report.contains("GOMP_SPINCOUNT = '77'"), "{report}");
}

#[test]
fn a_wait_policy_in_the_environment_is_not_overridden() {
    let report = libgomp_report(&[(WAIT_POLICY_VAR, "active")]);
    assert!(report.contains("OMP_WAIT_POLICY = 'ACTIVE'"), "{report}");
    assert!(
        !report.contains(&format!("GOMP_SPINCOUNT = '{DEFAULT_SPIN_COUNT}'")),
        "{report}"
    );
}

#[test]
fn this_process_records_whether_it_chose() {
    // /proc/self/environ is the environment the process started with, before any
    // constructor changed it.
    let initial = std::fs::read("/proc/self/environ").unwrap();
    let chose = initial.split(|&byte| byte == 0).any(|entry| {
        entry.starts_with(format!("{SPIN_COUNT_VAR}=").as_bytes())
            || entry.starts_with(format!("{WAIT_POLICY_VAR}=").as_bytes())
    });
    assert_eq!(oxydra_local::openmp_spin::short_spin_applied(), !chose);
    if !chose {
        assert_eq!(std::env::var(SPIN_COUNT_VAR).unwrap(), DEFAULT_SPIN_COUNT);
    }
}
