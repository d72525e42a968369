//! A router set replaced as a whole at run time by a rule source.

use std::sync::Arc;

use arc_swap::ArcSwap;
use rubbo_common::keys::{self, protocols};
use rubbo_common::{Invocation, Url};
use tracing::{debug, info, warn};

use super::{Candidates, Router, SingleConditionRouter};

/// Routers published by a rule source (a registry's `routers` category today, a config
/// center later), replaced as a whole on every change and run in priority order as one
/// router of the chain. Calls read a snapshot; a replacement never blocks them.
///
/// ```
/// use std::sync::Arc;
/// use rubbo_cluster::RouterChain;
/// use rubbo_cluster::router::DynamicRouters;
/// use rubbo_common::Url;
///
/// let rules = Arc::new(DynamicRouters::new("registry-rules"));
/// RouterChain::builtin().add_router(rules.clone());
/// let n = rules.replace_urls(&[Url::parse("route://0.0.0.0/org.demo.Greeter?rule=%3D%3E%20host%20%21%3D%2010.0.0.1").unwrap()]);
/// assert_eq!(n, 1);
/// rules.replace_urls(&[Url::parse("empty://0.0.0.0/org.demo.Greeter?category=routers").unwrap()]);
/// assert!(rules.is_empty());
/// ```
#[derive(Debug)]
pub struct DynamicRouters {
    name: String,
    priority: i32,
    routers: ArcSwap<Vec<Arc<dyn Router>>>,
}

impl DynamicRouters {
    /// Where the set runs in the chain by default: after the mock and tag routers, with
    /// the service condition rules.
    pub const DEFAULT_PRIORITY: i32 = 140;

    /// An empty set named `name` (for logs) at [`DEFAULT_PRIORITY`](Self::DEFAULT_PRIORITY).
    pub fn new(name: impl Into<String>) -> Self {
        Self::with_priority(name, Self::DEFAULT_PRIORITY)
    }

    /// An empty set named `name` running at `priority` in the chain.
    pub fn with_priority(name: impl Into<String>, priority: i32) -> Self {
        DynamicRouters {
            name: name.into(),
            priority,
            routers: ArcSwap::from_pointee(Vec::new()),
        }
    }

    /// Replaces every router with `routers`, run in their priority order (ties: as
    /// given).
    pub fn replace(&self, mut routers: Vec<Arc<dyn Router>>) {
        routers.sort_by_key(|r| r.priority());
        info!(set = %self.name, rules = routers.len(), "routing rules replaced");
        self.routers.store(Arc::new(routers));
    }

    /// Replaces every router with the condition rules among `urls`: `route://` or
    /// `condition://` URLs with an encoded `rule=` and no `router=` other than
    /// `condition`. `empty://` URLs are skipped (so an `empty://` list clears the set);
    /// other router types and bad rules are skipped with a log line. Returns how many
    /// routers are now in force.
    pub fn replace_urls(&self, urls: &[Url]) -> usize {
        let mut next: Vec<Arc<dyn Router>> = Vec::new();
        for url in urls {
            match url.protocol() {
                Some(protocols::EMPTY) => {}
                Some(protocols::ROUTE | protocols::CONDITION)
                    if url
                        .get_param(keys::ROUTER_KEY)
                        .is_none_or(|r| r == keys::CONDITION_ROUTER) =>
                {
                    match SingleConditionRouter::from_url(url) {
                        Ok(r) => next.push(Arc::new(r)),
                        Err(e) => warn!(rule = %url, error = %e, "bad routing rule skipped"),
                    }
                }
                _ => debug!(rule = %url, "unsupported router type skipped"),
            }
        }
        let n = next.len();
        self.replace(next);
        n
    }

    /// How many routers are in force.
    pub fn len(&self) -> usize {
        self.routers.load().len()
    }

    /// Whether no router is in force.
    pub fn is_empty(&self) -> bool {
        self.routers.load().is_empty()
    }
}

impl Router for DynamicRouters {
    fn name(&self) -> &str {
        &self.name
    }

    fn priority(&self) -> i32 {
        self.priority
    }

    fn route<'a>(
        &self,
        mut candidates: Candidates<'a>,
        consumer: &Url,
        invocation: &Invocation,
    ) -> Candidates<'a> {
        let routers = self.routers.load();
        for r in routers.iter() {
            candidates = r.route(candidates, consumer, invocation);
        }
        candidates
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rubbo_common::{BoxInvoker, Invocation, Url};

    use super::DynamicRouters;
    use crate::router::{Candidates, Router};

    #[derive(Debug)]
    struct At(Url);

    impl rubbo_common::Invoker for At {
        fn invoke(&self, _: Invocation) -> rubbo_common::InvokeFuture {
            unimplemented!("routing only")
        }
        fn url(&self) -> &Url {
            &self.0
        }
    }

    fn providers() -> Vec<BoxInvoker> {
        ["10.0.0.1", "10.0.0.2"]
            .iter()
            .map(|h| {
                Arc::new(At(Url::parse(&format!(
                    "dubbo://{h}:20880/org.demo.Greeter"
                ))
                .unwrap())) as BoxInvoker
            })
            .collect()
    }

    fn hosts(set: &DynamicRouters, all: &[BoxInvoker]) -> Vec<String> {
        let consumer = Url::parse("consumer://10.0.0.9/org.demo.Greeter").unwrap();
        let inv = Invocation::new("org.demo.Greeter", "greet");
        set.route(Candidates::new(all), &consumer, &inv)
            .iter()
            .map(|i| i.url().host().unwrap_or_default().to_owned())
            .collect()
    }

    fn route_url(rule: &str) -> Url {
        Url::parse("route://0.0.0.0/org.demo.Greeter?category=routers")
            .unwrap()
            .with_param_encoded("rule", rule)
    }

    #[test]
    fn replacing_swaps_the_whole_set_and_empty_clears_it() {
        let all = providers();
        let set = DynamicRouters::new("test");
        assert_eq!(hosts(&set, &all).len(), 2);
        assert_eq!(set.replace_urls(&[route_url("=> host != 10.0.0.1")]), 1);
        assert_eq!(hosts(&set, &all), ["10.0.0.2"]);
        assert_eq!(
            set.replace_urls(&[
                route_url("=> host != 10.0.0.2"),
                route_url("=> host = 10.0.0.2").with_param("router", "script"),
            ]),
            1,
            "a script router is skipped"
        );
        assert_eq!(hosts(&set, &all), ["10.0.0.1"], "the old rule is gone");
        set.replace_urls(&[Url::parse("empty://0.0.0.0/org.demo.Greeter").unwrap()]);
        assert!(set.is_empty());
        assert_eq!(hosts(&set, &all).len(), 2);
    }
}
