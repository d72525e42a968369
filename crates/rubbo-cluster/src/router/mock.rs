//! The mock router (Java's `MockInvokersSelector`).

use rubbo_common::{Invocation, Url};

use super::{Candidates, Router};

/// The attachment the mock cluster invoker sets to ask for `mock://` providers.
pub const NEED_MOCK_ATTACHMENT: &str = "invocation.need.mock";

/// Sends calls flagged with [`NEED_MOCK_ATTACHMENT`] to `mock://` providers and every
/// other call to the normal providers.
#[derive(Debug, Default, Clone, Copy)]
pub struct MockRouter;

fn is_mock(url: &Url) -> bool {
    url.protocol() == Some("mock")
}

impl Router for MockRouter {
    fn name(&self) -> &str {
        "mock"
    }

    fn priority(&self) -> i32 {
        -100
    }

    fn route<'a>(&self, mut c: Candidates<'a>, _: &Url, inv: &Invocation) -> Candidates<'a> {
        let want_mock = match inv.attachment_str(NEED_MOCK_ATTACHMENT) {
            None => false,
            Some(v) if v.eq_ignore_ascii_case("true") => true,
            Some(_) => return c,
        };
        match c.meta() {
            Some(meta) if !meta.any_mock && !want_mock => {}
            Some(meta) => c.retain_indexed(|i, _| meta.mock[i] == want_mock),
            None => c.retain(|p| is_mock(p.url()) == want_mock),
        }
        c
    }
}
