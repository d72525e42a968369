//! What the filters share.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use rubbo_common::{InvokeFuture, RpcError};
use tokio::sync::Semaphore;

/// A call answered at once with `error`.
pub(crate) fn fail(error: RpcError) -> InvokeFuture {
    Box::pin(std::future::ready(Err(error)))
}

/// The concurrency slots of each limited method of one invoker (`executes`,
/// `actives`), made on a method's first call with that method's limit.
#[derive(Debug, Default)]
pub(crate) struct MethodSlots {
    methods: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl MethodSlots {
    /// The slots of `method`, `max` of them when first asked for.
    pub(crate) fn get(&self, method: &str, max: u32) -> Arc<Semaphore> {
        let mut methods = self.methods.lock();
        if let Some(s) = methods.get(method) {
            return s.clone();
        }
        let s = Arc::new(Semaphore::new(max as usize));
        methods.insert(method.to_owned(), s.clone());
        s
    }
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
