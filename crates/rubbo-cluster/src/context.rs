//! The shared state of a consumer's cluster layer.

use std::sync::Arc;

use rubbo_common::resolve::merge_provider_url;
use rubbo_common::{BoxInvoker, ErrorKind, ExtensionTable, RpcError, Url};

use crate::directory::{DynamicDirectory, InvokerFactory, StaticDirectory, parse_url_list};
use crate::loadbalance::BalancerEnv;
use crate::{
    Cluster, Directory, LoadBalance, MockRegistry, Rand, RouterChain, RpcStatus, StatusInvoker,
};

/// What the cluster invokers of one consumer (application) share: call statistics,
/// the balancer table, user mocks and the random source. Cheap to clone.
///
/// ```
/// use rubbo_cluster::{ClusterContext, Rand};
/// let ctx = ClusterContext::with_rand(Rand::seeded(1));
/// assert!(ctx.load_balances.contains("roundrobin"));
/// ```
#[derive(Debug, Clone)]
pub struct ClusterContext {
    /// Call statistics of every provider invoker made by this context's directories.
    pub status: Arc<RpcStatus>,
    /// Balancers by name (`loadbalance=`).
    pub load_balances: Arc<ExtensionTable<dyn LoadBalance>>,
    /// Strategies by name (`cluster=`).
    pub clusters: Arc<ExtensionTable<dyn Cluster>>,
    /// User mock implementations.
    pub mocks: Arc<MockRegistry>,
    /// Randomness for balancers and reselection.
    pub rand: Rand,
}

impl Default for ClusterContext {
    fn default() -> Self {
        Self::with_rand(Rand::thread())
    }
}

impl ClusterContext {
    /// A context drawing randomness from `rand` (seed it for reproducible tests).
    pub fn with_rand(rand: Rand) -> Self {
        let status = Arc::new(RpcStatus::new());
        let env = BalancerEnv {
            status: status.clone(),
            rand: rand.clone(),
        };
        ClusterContext {
            load_balances: Arc::new(crate::load_balances(&env)),
            clusters: Arc::new(crate::clusters()),
            status,
            mocks: Arc::new(MockRegistry::default()),
            rand,
        }
    }

    /// A new built-in router chain for a reference.
    pub fn router_chain(&self, _consumer: &Url) -> Arc<RouterChain> {
        Arc::new(RouterChain::builtin())
    }

    /// A static directory over `invokers`, each wrapped to feed [`Self::status`].
    pub fn static_directory(
        &self,
        consumer: Url,
        invokers: Vec<BoxInvoker>,
    ) -> Arc<StaticDirectory> {
        let chain = self.router_chain(&consumer);
        let wrapped = invokers
            .into_iter()
            .map(|i| StatusInvoker::wrap(i, self.status.clone()))
            .collect();
        Arc::new(StaticDirectory::new(consumer, wrapped, chain))
    }

    /// A static directory over the providers of a reference's `url=` list
    /// (`dubbo://a:20880;dubbo://b:20880`), each referred through `factory` with its
    /// URL merged with `consumer` (consumer settings win). Fails if a URL does not
    /// parse or a provider cannot be referred.
    pub async fn static_directory_from_urls(
        &self,
        consumer: Url,
        urls: &str,
        factory: InvokerFactory,
    ) -> Result<Arc<StaticDirectory>, RpcError> {
        let parsed = parse_url_list(urls).map_err(|e| {
            RpcError::new(ErrorKind::Unknown, format!("bad url list \"{urls}\": {e}"))
        })?;
        let referred = futures::future::join_all(
            parsed
                .iter()
                .map(|u| factory(merge_provider_url(u, &consumer))),
        )
        .await;
        let invokers = referred.into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(self.static_directory(consumer, invokers))
    }

    /// An empty dynamic directory referring providers through `factory`.
    pub fn dynamic_directory(
        &self,
        consumer: Url,
        factory: InvokerFactory,
    ) -> Arc<DynamicDirectory> {
        let chain = self.router_chain(&consumer);
        Arc::new(DynamicDirectory::new(
            consumer,
            factory,
            chain,
            self.status.clone(),
        ))
    }

    /// Joins `directory` with the strategy named by its URL's `cluster` (default
    /// `failover`), wrapped for mock.
    pub fn join(
        &self,
        directory: Arc<dyn Directory>,
    ) -> Result<BoxInvoker, rubbo_common::ExtensionError> {
        let cluster = self
            .clusters
            .select(directory.url(), rubbo_common::keys::CLUSTER_KEY)?;
        Ok(cluster.join(directory, self))
    }
}
