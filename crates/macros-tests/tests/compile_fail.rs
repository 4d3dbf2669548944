//! The mistakes users make with `#[tool]` are compile errors that say what to do.

#[test]
fn mistakes_are_compile_errors_that_say_what_to_do() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
