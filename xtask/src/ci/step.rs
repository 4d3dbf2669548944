//! One step of `cargo xtask ci` ([`Step`]): a name for the report, the program and its
//! arguments, and when it runs (after the tests' setup, beside the test run).

use std::path::Path;

/// One step: a name for the report, the program (cargo, unless said otherwise) and its
/// arguments.
pub(super) struct Step {
    pub(super) name: &'static str,
    pub(super) program: &'static str,
    pub(super) args: Vec<String>,
    pub(super) env: Vec<(&'static str, String)>,
    /// Whether it runs tests, and so needs what `TestSetup::prepare_tests` provides.
    pub(super) runs_tests: bool,
    /// Whether it runs beside the test run: started once the tests' build is done and
    /// the tests run (they leave the target directory's lock free), not after them.
    pub(super) beside_tests: bool,
    /// Texts that together make the line of the step's stderr that says its build is
    /// done and its tests run (nextest's `Starting N tests across M binaries`): the
    /// steps marked `beside_tests` start then.
    pub(super) running_line: Option<&'static [&'static str]>,
}

impl Step {
    pub(super) fn new(name: &'static str, args: &[&str], runs_tests: bool) -> Self {
        Self {
            name,
            program: "cargo",
            args: args.iter().map(|arg| (*arg).to_owned()).collect(),
            env: Vec::new(),
            runs_tests,
            beside_tests: false,
            running_line: None,
        }
    }

    /// A step that runs `program` with `args` instead of cargo.
    pub(super) fn program(name: &'static str, program: &'static str, args: &[&str]) -> Self {
        Self {
            program,
            ..Self::new(name, args, false)
        }
    }

    /// The command line, as the report and a failure show it.
    pub(super) fn command_line(&self) -> String {
        std::iter::once(self.program)
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs this step beside the test run rather than after it.
    pub(super) fn beside_tests(mut self) -> Self {
        self.beside_tests = true;
        self
    }

    /// Compiles the workspace's crates through `clippy-driver` with warnings denied:
    /// what `cargo clippy` does, in a step that builds the code anyway. The wrapper is
    /// given as cargo configuration, not as `RUSTC_WORKSPACE_WRAPPER`, so that the
    /// tests' own processes do not inherit it (the trybuild test runs cargo itself).
    pub(super) fn with_clippy(mut self, driver: &Path) -> Self {
        let quoted = driver
            .display()
            .to_string()
            .replace('\\', "\\\\")
            .replace('"', "\\\"");
        self.args.push("--config".to_owned());
        self.args
            .push(format!("build.rustc-workspace-wrapper=\"{quoted}\""));
        // clippy-driver reads its lint flags from here, as `cargo clippy -- -D warnings`
        // passes them.
        self.env.push((
            "CLIPPY_ARGS",
            "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__".to_owned(),
        ));
        self
    }
}
