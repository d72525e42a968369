//! Misuse of `#[rubbo::service]` and `#[derive(JavaType)]` fails with a clear message.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui-pass/*.rs");
}
