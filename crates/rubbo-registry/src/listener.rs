//! `NotifyListener`: what a subscriber (the consumer's directory) receives.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use rubbo_common::Url;
use tracing::error;

/// Receives the address lists of a subscription.
///
/// Each call carries the **whole current list of one category** (`providers`,
/// `configurators` or `routers`, read with [`list_category`](crate::list_category)); an
/// empty category is one `empty://` URL ([`empty_url`](crate::empty_url)). Calls come
/// from the registry's tasks: keep them quick and never block. A panic is caught and
/// logged; the subscription goes on.
///
/// Any `Fn(Vec<Url>) + Send + Sync` closure is a listener. Listeners are identified by
/// their `Arc` (pointer equality) when unsubscribing.
///
/// ```
/// use rubbo_registry::NotifyListener;
/// use rubbo_common::Url;
/// use std::sync::Arc;
///
/// #[derive(Debug)]
/// struct Printer;
/// impl NotifyListener for Printer {
///     fn notify(&self, urls: Vec<Url>) {
///         let _ = urls.len();
///     }
/// }
/// let a: Arc<dyn NotifyListener> = Arc::new(Printer);
/// let b: Arc<dyn NotifyListener> = Arc::new(|urls: Vec<Url>| drop(urls));
/// a.notify(vec![]);
/// b.notify(vec![]);
/// ```
pub trait NotifyListener: Send + Sync + 'static {
    /// The whole current list of one category.
    fn notify(&self, urls: Vec<Url>);
}

impl<F> NotifyListener for F
where
    F: Fn(Vec<Url>) + Send + Sync + 'static,
{
    fn notify(&self, urls: Vec<Url>) {
        self(urls)
    }
}

impl fmt::Debug for dyn NotifyListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NotifyListener@{:p}", self as *const dyn NotifyListener)
    }
}

/// A shared listener.
pub type SharedListener = Arc<dyn NotifyListener>;

/// Whether `a` and `b` are the same listener (the same allocation).
pub fn same_listener(a: &SharedListener, b: &SharedListener) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// Calls `listener` with `urls`, catching and logging a panic so that one faulty
/// listener never kills the task that notifies it. Returns whether the call returned.
pub fn notify_safely(listener: &dyn NotifyListener, urls: Vec<Url>) -> bool {
    let count = urls.len();
    match catch_unwind(AssertUnwindSafe(|| listener.notify(urls))) {
        Ok(()) => true,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic".to_owned());
            error!(urls = count, panic = %msg, "registry listener panicked; subscription kept");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panicking_listener_is_contained() {
        let l: SharedListener = Arc::new(|_: Vec<Url>| panic!("boom"));
        assert!(!notify_safely(&*l, vec![]));
        let ok: SharedListener = Arc::new(|_: Vec<Url>| {});
        assert!(notify_safely(&*ok, vec![]));
        assert!(same_listener(&l, &l.clone()));
        assert!(!same_listener(&l, &ok));
    }
}
