#![doc = include_str!("../README.md")]

pub mod cluster;
pub mod configurator;
mod context;
pub mod directory;
mod error;
pub mod loadbalance;
pub mod mock;
mod random;
pub mod router;
mod status;

pub use cluster::{Cluster, clusters};
pub use configurator::{Configurator, Configurators, RuleSide};
pub use context::ClusterContext;
pub use directory::{Directory, DynamicDirectory, InvokerFactory, StaticDirectory};
pub use error::ClusterError;
pub use loadbalance::{LoadBalance, load_balances};
pub use mock::{MockClusterInvoker, MockRegistry};
pub use random::Rand;
pub use router::{Candidates, RouteRecorder, Router, RouterChain};
pub use status::{MethodStatus, MethodView, RpcStatus, StatusInvoker};
