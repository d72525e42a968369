//! What the filters share.

use rubbo_common::{InvokeFuture, RpcError};

/// A call answered at once with `error`.
pub(crate) fn fail(error: RpcError) -> InvokeFuture {
    Box::pin(std::future::ready(Err(error)))
}

/// Java's `ConfigUtils.isEmpty`: absent, empty, `false`, `0`, `null` and `N/A` all mean
/// "not set" for switch-like values such as `token`.
pub(crate) fn is_config_empty(value: Option<&str>) -> bool {
    match value {
        None => true,
        Some(v) => {
            v.is_empty()
                || ["false", "0", "null", "N/A"]
                    .iter()
                    .any(|e| v.eq_ignore_ascii_case(e))
        }
    }
}

/// The `url`, `is_available` and `destroy` of a filter's invoker: those of `self.next`.
macro_rules! delegate_to_next {
    () => {
        fn url(&self) -> &rubbo_common::Url {
            self.next.url()
        }

        fn is_available(&self) -> bool {
            self.next.is_available()
        }

        fn destroy(&self) {
            self.next.destroy()
        }
    };
}
pub(crate) use delegate_to_next;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_empty_follows_java() {
        for v in [
            None,
            Some(""),
            Some("false"),
            Some("FALSE"),
            Some("0"),
            Some("null"),
            Some("N/A"),
        ] {
            assert!(is_config_empty(v), "{v:?}");
        }
        for v in ["true", "secret", "1"] {
            assert!(!is_config_empty(Some(v)), "{v}");
        }
    }
}
