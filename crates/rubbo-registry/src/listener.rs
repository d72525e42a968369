//! `NotifyListener`: what a subscriber (the consumer's directory) receives.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use rubbo_common::Url;
use tracing::error;

/// Receives the address lists of a subscription.
///
/// Each [`notify`](Self::notify) call carries the **whole current list of one category**
/// (`providers`, `configurators` or `routers`, read with
/// [`list_category`](crate::list_category)); an empty category is one `empty://` URL
/// ([`empty_url`](crate::empty_url)). A registry that knows what changed (application-level
/// discovery) may instead call [`notify_delta`](Self::notify_delta) with the providers
/// added and removed since its previous call; a listener that does not implement it gets
/// the whole list through `notify`, as before. Calls come from the registry's tasks: keep
/// them quick and never block. A panic is caught and logged; the subscription goes on.
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

    /// A change of the `providers` list: `delta` applies to the list of this
    /// subscription's previous call (a `notify` or a `notify_delta`), in the order the
    /// calls came. `full` builds the whole list after the change, what `notify` would
    /// get; the default hands it to [`notify`](Self::notify), so a listener that keeps
    /// whole lists needs nothing more.
    ///
    /// A registry sends deltas only after a first whole list, never with `empty://`
    /// in them, and announces a list left empty with `notify` and `empty://`.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use rubbo_common::Url;
    /// use rubbo_registry::{NotifyListener, UrlDelta};
    ///
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = seen.clone();
    /// let whole_lists = move |urls: Vec<Url>| sink.lock().unwrap().push(urls.len());
    /// let added = Url::parse("dubbo://10.0.0.2:20880/org.demo.Greeter").unwrap();
    /// let delta = UrlDelta { added: vec![added], removed: vec![] };
    /// // A listener without deltas gets the whole list the sender builds.
    /// whole_lists.notify_delta(delta, &|| vec![
    ///     Url::parse("dubbo://10.0.0.1:20880/org.demo.Greeter").unwrap(),
    ///     Url::parse("dubbo://10.0.0.2:20880/org.demo.Greeter").unwrap(),
    /// ]);
    /// assert_eq!(*seen.lock().unwrap(), [2]);
    /// ```
    fn notify_delta(&self, delta: UrlDelta, full: &dyn Fn() -> Vec<Url>) {
        let _ = delta;
        self.notify(full());
    }
}

/// What changed in a `providers` list since the previous notification of the same
/// subscription (see [`NotifyListener::notify_delta`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UrlDelta {
    /// Provider URLs now in the list that were not.
    pub added: Vec<Url>,
    /// Provider URLs no longer in the list.
    pub removed: Vec<Url>,
}

impl UrlDelta {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
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
            let msg = panic_message(panic.as_ref());
            error!(urls = count, panic = %msg, "registry listener panicked; subscription kept");
            false
        }
    }
}

/// Calls `listener.notify_delta(delta, full)`, catching and logging a panic as
/// [`notify_safely`] does. Returns whether the call returned.
pub fn notify_delta_safely(
    listener: &dyn NotifyListener,
    delta: UrlDelta,
    full: &dyn Fn() -> Vec<Url>,
) -> bool {
    let count = delta.added.len() + delta.removed.len();
    match catch_unwind(AssertUnwindSafe(|| listener.notify_delta(delta, full))) {
        Ok(()) => true,
        Err(panic) => {
            error!(urls = count, panic = %panic_message(panic.as_ref()), "registry listener panicked on a delta; subscription kept");
            false
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic".to_owned())
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
        assert!(!notify_delta_safely(&*l, UrlDelta::default(), &Vec::new));
        assert!(notify_delta_safely(&*ok, UrlDelta::default(), &Vec::new));
    }
}
