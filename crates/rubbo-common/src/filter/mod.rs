//! Filters: middleware around invokers (Java's `Filter` SPI, as tower `Layer`s).
//!
//! A [`Filter`] wraps an invoker in another. Which filters wrap which invoker is decided
//! once, when a service is exported or a provider referred, from three things, as
//! Java's `@Activate` and `ExtensionLoader.getActivateExtension` decide it:
//!
//! 1. the [`Stage`] of the chain: the provider chain (between the protocol's dispatcher
//!    and the service), the per-provider consumer chain (between load balancing and the
//!    protocol invoker, Java's `Filter` on the consumer side) or the cluster chain
//!    (around the whole cluster invoker, once per call: Java's `ClusterFilter`);
//! 2. each filter's [`Activate`]: the stages it runs in unasked, its order, and the URL
//!    keys that must be present for it to run (`token` only when the URL has `token`);
//! 3. the URL's `service.filter` (provider) or `reference.filter` (consumer) list, with
//!    Java's syntax: names to add, `-name` to remove one, `-default` to remove every
//!    activated one, and `default` to mark where the activated ones go among the named.
//!
//! # Order
//!
//! On a consumer a call passes, outermost first: the cluster chain, the cluster invoker
//! (directory, routers, load balancing, retries), the per-provider chain, and the
//! protocol invoker. On a provider: the protocol's dispatcher, the provider chain, the
//! service implementation. Within a chain, activated filters run in ascending
//! [`Activate::order`] (lower runs first, i.e. outermost; ties by name), then the named
//! ones in the order they are named. The built-in filters and their orders are listed
//! in one table, in the `rubbo-filter` crate's documentation.
//!
//! ```
//! use rubbo_common::filter::{select, Activate, Stage};
//! use rubbo_common::{filter_fn, BoxInvoker, ExtensionTable, Filter, Invocation, Url};
//! use std::sync::Arc;
//!
//! let pass = |a: Activate| -> Arc<dyn Filter> {
//!     Arc::new(filter_fn(|inv: Invocation, next: BoxInvoker| next.invoke(inv)).with_activate(a))
//! };
//! let mut table: ExtensionTable<dyn Filter> = ExtensionTable::new("filter", "");
//! table.register("echo", pass(Activate::provider(-110_000)));
//! table.register("token", pass(Activate::provider(0).when_keys(&["token"])));
//! table.register("audit", pass(Activate::on_demand()));
//!
//! let names = |url: &str| -> Vec<String> {
//!     let url = Url::parse(url).unwrap();
//!     select(&table, &url, Stage::Provider).unwrap().into_iter().map(|(n, _)| n).collect()
//! };
//! assert_eq!(names("dubbo://h/S"), ["echo"]);
//! assert_eq!(names("dubbo://h/S?token=t"), ["echo", "token"]);
//! assert_eq!(names("dubbo://h/S?token=t&service.filter=audit,-echo"), ["token", "audit"]);
//! assert_eq!(names("dubbo://h/S?service.filter=audit,default"), ["audit", "echo"]);
//! assert_eq!(names("dubbo://h/S?service.filter=-default"), Vec::<String>::new());
//! let err = select(&table, &Url::parse("dubbo://h/S?service.filter=nope").unwrap(), Stage::Provider);
//! assert_eq!(
//!     err.err().unwrap().to_string(),
//!     "no filter extension named \"nope\" (known: audit, echo, token)"
//! );
//! ```

mod activate;
mod fn_filter;
mod protocol;
mod tower;

use std::sync::Arc;

pub use activate::{Activate, Stage};
pub use fn_filter::{FilterFn, filter_fn};
pub use protocol::FilteredProtocol;
pub use tower::{LayerFilter, layer_filter};

use crate::keys::{REFERENCE_FILTER_KEY, SERVICE_FILTER_KEY};
use crate::{BoxInvoker, ExtensionError, ExtensionTable, Url};

/// In a filter list, the name that stands for the activated filters (Java's `default`).
pub const DEFAULT_FILTER: &str = "default";

/// In a filter list, the prefix that removes a filter (`-token`, `-default`).
pub const REMOVE_PREFIX: &str = "-";

/// Which end of a call a URL stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The calling side.
    Consumer,
    /// The serving side.
    Provider,
}

impl Side {
    /// The URL `side` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Consumer => crate::keys::CONSUMER_SIDE,
            Side::Provider => crate::keys::PROVIDER_SIDE,
        }
    }
}

/// A filter: wraps an invoker in another (a tower `Layer` over invokers), and says
/// where and when it applies (Java's `@Activate`).
///
/// `layer` runs once per wrapped invoker (an exported service, a referred provider, a
/// cluster), so a filter can read its settings from `next.url()` there and keep
/// per-service state (a semaphore, a rate counter) in the invoker it returns. The
/// per-call work is the returned invoker's `invoke`.
///
/// A filter that only looks at a call and passes it on returns `next.invoke(inv)`
/// itself: no future of its own, so it costs nothing per call beyond its check.
///
/// ```
/// use rubbo_common::filter::Activate;
/// use rubbo_common::{filter_fn, BoxInvoker, Filter, Invocation};
///
/// // Adds an attachment to every call a consumer makes, on every provider.
/// let tag = filter_fn(|mut inv: Invocation, next: BoxInvoker| {
///     inv.set_attachment("trace-id", "t-1");
///     next.invoke(inv)
/// })
/// .with_activate(Activate::consumer(0));
/// fn _dyn_ok(_: &dyn Filter) {}
/// _dyn_ok(&tag);
/// ```
pub trait Filter: Send + Sync + std::fmt::Debug + 'static {
    /// Wraps `next`.
    fn layer(&self, next: BoxInvoker) -> BoxInvoker;

    /// Where and when the filter runs unasked. Default: only where named in
    /// `service.filter` / `reference.filter`.
    fn activate(&self) -> Activate {
        Activate::on_demand()
    }
}

/// A filter with the name it is registered under.
pub type NamedFilter = (String, Arc<dyn Filter>);

/// The filters of `table` that wrap an invoker for `url` in a chain of `stage`, in
/// order (outermost first), each with its name.
///
/// An unknown name in `service.filter` / `reference.filter` is an error naming the
/// known ones. A named filter that belongs to another stage (a cluster filter named in
/// `reference.filter`, seen by the per-provider chain) is left to its own stage.
pub fn select(
    table: &ExtensionTable<dyn Filter>,
    url: &Url,
    stage: Stage,
) -> Result<Vec<NamedFilter>, ExtensionError> {
    let spec_key = match stage {
        Stage::Provider => SERVICE_FILTER_KEY,
        Stage::Consumer | Stage::Cluster => REFERENCE_FILTER_KEY,
    };
    let named: Vec<&str> = url
        .get_param(spec_key)
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    let removed = |name: &str| {
        named
            .iter()
            .any(|n| n.strip_prefix(REMOVE_PREFIX) == Some(name))
    };
    let mut activated = Vec::new();
    if !removed(DEFAULT_FILTER) {
        for name in table.names() {
            let filter = table.get(&name)?;
            let a = filter.activate();
            if a.is_auto()
                && a.runs_in(stage)
                && a.is_active(url)
                && !removed(&name)
                && !named.contains(&name.as_str())
            {
                activated.push((a.order(), name, filter));
            }
        }
        // Stable: ties keep the table's (name) order.
        activated.sort_by_key(|(order, _, _)| *order);
    }
    let mut activated: Vec<NamedFilter> = activated.into_iter().map(|(_, n, f)| (n, f)).collect();
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut seen_default = false;
    for name in &named {
        if *name == DEFAULT_FILTER {
            seen_default = true;
            continue;
        }
        if name.starts_with(REMOVE_PREFIX) || removed(name) {
            continue;
        }
        let filter = table.get(name)?;
        if !filter.activate().runs_in(stage) {
            continue;
        }
        let list = if seen_default {
            &mut after
        } else {
            &mut before
        };
        list.push(((*name).to_owned(), filter));
    }
    if seen_default {
        before.append(&mut activated);
        before.append(&mut after);
        Ok(before)
    } else {
        activated.append(&mut before);
        Ok(activated)
    }
}

/// Wraps `invoker` in `filters`, the first outermost.
pub fn wrap(invoker: BoxInvoker, filters: &[NamedFilter]) -> BoxInvoker {
    filters
        .iter()
        .rev()
        .fold(invoker, |next, (_, f)| f.layer(next))
}

/// Wraps `invoker` in the chain of `stage` that `table` selects for its URL
/// ([`select`], then [`wrap`]).
pub fn build_chain(
    invoker: BoxInvoker,
    table: &ExtensionTable<dyn Filter>,
    stage: Stage,
) -> Result<BoxInvoker, ExtensionError> {
    let filters = select(table, invoker.url(), stage)?;
    Ok(wrap(invoker, &filters))
}
