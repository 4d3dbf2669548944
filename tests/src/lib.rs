//! End-to-end tests of the Oxydra workspace: the library crates together, through the
//! `oxydra` facade, against the mock provider server of `oxydra-test-support`. The
//! tests are in `tests/`; this library is empty. (The `oxydra` binary's end-to-end
//! tests are in `crates/cli/tests`; the recorded provider streams are in `fixtures/`.)
