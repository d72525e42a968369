//! Parameter key names and typed parameters with Dubbo's defaults.
//!
//! Key names are kept here, once, so no layer scatters string literals. Typed
//! parameters follow linkerd's `Param<T>` idea: `url.param::<Timeout>()` gives the value
//! with the Java default applied.

use std::time::Duration;

macro_rules! keys {
    ($($(#[$m:meta])* $name:ident = $value:literal;)*) => {
        $($(#[$m])* pub const $name: &str = $value;)*
    };
}

keys! {
    /// Service interface name.
    INTERFACE_KEY = "interface";
    /// Service group.
    GROUP_KEY = "group";
    /// Service version.
    VERSION_KEY = "version";
    /// Request path (attachment), normally the interface.
    PATH_KEY = "path";
    /// Application name.
    APPLICATION_KEY = "application";
    /// The peer's application name (attachment).
    REMOTE_APPLICATION_KEY = "remote.application";
    /// `provider` or `consumer`.
    SIDE_KEY = "side";
    /// Value of `side` on providers.
    PROVIDER_SIDE = "provider";
    /// Value of `side` on consumers.
    CONSUMER_SIDE = "consumer";
    /// Registry category of a URL.
    CATEGORY_KEY = "category";
    /// Sorted comma list of a provider's methods.
    METHODS_KEY = "methods";
    /// Call timeout in ms.
    TIMEOUT_KEY = "timeout";
    /// Failover retries.
    RETRIES_KEY = "retries";
    /// Load balance policy name.
    LOADBALANCE_KEY = "loadbalance";
    /// Cluster (fault tolerance) strategy name.
    CLUSTER_KEY = "cluster";
    /// Provider weight.
    WEIGHT_KEY = "weight";
    /// Warm-up period in ms.
    WARMUP_KEY = "warmup";
    /// Provider start time (ms since epoch).
    TIMESTAMP_KEY = "timestamp";
    /// Process id.
    PID_KEY = "pid";
    /// Connections per provider address (0 = shared).
    CONNECTIONS_KEY = "connections";
    /// Consumer per-method concurrency limit.
    ACTIVES_KEY = "actives";
    /// Provider per-method concurrency limit.
    EXECUTES_KEY = "executes";
    /// Provider dispatcher (`all`, `direct`).
    DISPATCHER_KEY = "dispatcher";
    /// Serialization name.
    SERIALIZATION_KEY = "serialization";
    /// Preferred serializations, comma separated.
    PREFER_SERIALIZATION_KEY = "prefer.serialization";
    /// Heartbeat interval in ms.
    HEARTBEAT_KEY = "heartbeat";
    /// Idle close timeout in ms.
    HEARTBEAT_TIMEOUT_KEY = "heartbeat.timeout";
    /// Maximum body size in bytes.
    PAYLOAD_KEY = "payload";
    /// Connect timeout in ms.
    CONNECT_TIMEOUT_KEY = "connect.timeout";
    /// Dubbo protocol version.
    DUBBO_VERSION_KEY = "dubbo";
    /// Framework release.
    RELEASE_KEY = "release";
    /// Generic call mode.
    GENERIC_KEY = "generic";
    /// Sticky invoker.
    STICKY_KEY = "sticky";
    /// Forking parallelism.
    FORKS_KEY = "forks";
    /// Mock policy.
    MOCK_KEY = "mock";
    /// Tag routing.
    TAG_KEY = "dubbo.tag";
    /// Force tag routing.
    FORCE_TAG_KEY = "dubbo.force.tag";
    /// Start-up check of providers.
    CHECK_KEY = "check";
    /// Whether a registered node is ephemeral.
    DYNAMIC_KEY = "dynamic";
    /// Whether a service is registered.
    REGISTER_KEY = "register";
    /// Whether a reference subscribes.
    SUBSCRIBE_KEY = "subscribe";
    /// Provider token.
    TOKEN_KEY = "token";
    /// Whether the provider bound to any host.
    ANYHOST_KEY = "anyhost";
    /// Deprecated flag.
    DEPRECATED_KEY = "deprecated";
    /// The registry type inside a `registry://` URL.
    REGISTRY_KEY = "registry";
    /// The encoded provider URL inside a `registry://` URL.
    EXPORT_KEY = "export";
    /// The encoded consumer parameters inside a `registry://` URL.
    REFER_KEY = "refer";
    /// Prefix of legacy `default.{key}` parameters.
    DEFAULT_KEY_PREFIX = "default.";
    /// Consistent-hash virtual nodes.
    HASH_NODES_KEY = "hash.nodes";
    /// Consistent-hash argument indexes.
    HASH_ARGUMENTS_KEY = "hash.arguments";
    /// Filters on a reference.
    REFERENCE_FILTER_KEY = "reference.filter";
    /// Filters on a service.
    SERVICE_FILTER_KEY = "service.filter";
    /// Invoker listeners.
    INVOKER_LISTENER_KEY = "invoker.listener";
    /// Provider thread pool keys, dropped when a consumer merges a provider URL.
    THREADNAME_KEY = "threadname";
    /// Thread pool kind.
    THREADPOOL_KEY = "threadpool";
    /// Core threads.
    CORE_THREADS_KEY = "corethreads";
    /// Threads.
    THREADS_KEY = "threads";
    /// Queue length.
    QUEUES_KEY = "queues";
    /// Thread keep-alive.
    ALIVE_KEY = "alive";
    /// Transporter.
    TRANSPORTER_KEY = "transporter";
    /// Whether a rule or a provider is enabled (default true).
    ENABLED_KEY = "enabled";
    /// Governance rule format version of an override URL (`v2.7`, `v3.0`).
    CONFIG_VERSION_KEY = "configVersion";
    /// Marks an override URL converted from an older rule format.
    COMPATIBLE_CONFIG_KEY = "compatible_config";
    /// Provider addresses an override URL is limited to (comma separated).
    OVERRIDE_PROVIDERS_KEY = "providerAddresses";
    /// The IP a consumer registers under (in `refer=`).
    REGISTER_IP_KEY = "register.ip";
    /// How long a `check=true` reference waits for its first provider list, in ms.
    CHECK_TIMEOUT_KEY = "check.timeout";
    /// Router type of a routing-rule URL (`condition` when absent).
    ROUTER_KEY = "router";
    /// Value of [`ROUTER_KEY`] naming a condition router.
    CONDITION_ROUTER = "condition";
    /// The host of a rule that applies to every address.
    ANYHOST_VALUE = "0.0.0.0";
    /// The wildcard value.
    ANY_VALUE = "*";
}

/// URL protocols (schemes) that carry rules or markers rather than providers.
pub mod protocols {
    /// An override rule: its parameters replace the matching URL's.
    pub const OVERRIDE: &str = "override";
    /// An absent rule: its parameters fill in only those the matching URL lacks.
    pub const ABSENT: &str = "absent";
    /// The empty list marker of a registry category.
    pub const EMPTY: &str = "empty";
    /// A Dubbo 2 routing rule (`route://`).
    pub const ROUTE: &str = "route";
    /// A condition routing rule (`condition://`).
    pub const CONDITION: &str = "condition";
}

/// A typed URL parameter: its key, its value type and its default.
///
/// ```
/// use rubbo_common::keys::Param;
/// use rubbo_common::Url;
///
/// struct Shards;
/// impl Param for Shards {
///     type Value = u32;
///     const KEY: &'static str = "shards";
///     fn default_value() -> u32 { 4 }
///     fn parse(raw: &str) -> Option<u32> { raw.trim().parse().ok() }
/// }
///
/// assert_eq!(Url::parse("x://h?shards=9").unwrap().param::<Shards>(), 9);
/// assert_eq!(Url::parse("x://h").unwrap().param::<Shards>(), 4);
/// ```
pub trait Param {
    /// The parsed type.
    type Value;
    /// The parameter key.
    const KEY: &'static str;
    /// The value when the key is absent or does not parse.
    fn default_value() -> Self::Value;
    /// Parses the raw string; `None` falls back to the default.
    fn parse(raw: &str) -> Option<Self::Value>;
}

macro_rules! ms_param {
    ($(#[$m:meta])* $name:ident, $key:expr, $default:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl Param for $name {
            type Value = Duration;
            const KEY: &'static str = $key;
            fn default_value() -> Duration {
                Duration::from_millis($default)
            }
            fn parse(raw: &str) -> Option<Duration> {
                raw.trim()
                    .parse::<i64>()
                    .ok()
                    .map(|v| Duration::from_millis(v.max(0).unsigned_abs()))
            }
        }
    };
}

macro_rules! num_param {
    ($(#[$m:meta])* $name:ident, $ty:ty, $key:expr, $default:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl Param for $name {
            type Value = $ty;
            const KEY: &'static str = $key;
            fn default_value() -> $ty {
                $default
            }
            fn parse(raw: &str) -> Option<$ty> {
                raw.trim().parse().ok()
            }
        }
    };
}

macro_rules! bool_param {
    ($(#[$m:meta])* $name:ident, $key:expr, $default:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl Param for $name {
            type Value = bool;
            const KEY: &'static str = $key;
            fn default_value() -> bool {
                $default
            }
            fn parse(raw: &str) -> Option<bool> {
                Some(raw.trim().eq_ignore_ascii_case("true"))
            }
        }
    };
}

ms_param!(/// Call timeout, default 1000 ms (dubbo protocol).
    Timeout, TIMEOUT_KEY, 1000);
ms_param!(/// Connect timeout, default 3000 ms.
    ConnectTimeout, CONNECT_TIMEOUT_KEY, 3000);
ms_param!(/// Heartbeat interval, default 60 000 ms.
    Heartbeat, HEARTBEAT_KEY, 60_000);
ms_param!(/// Warm-up period, default 600 000 ms.
    Warmup, WARMUP_KEY, 600_000);
num_param!(/// Failover retries, default 2.
    Retries, u32, RETRIES_KEY, 2);
num_param!(/// Provider weight, default 100.
    Weight, i32, WEIGHT_KEY, 100);
num_param!(/// Connections per address, default 0 (shared).
    Connections, u32, CONNECTIONS_KEY, 0);
num_param!(/// Consumer concurrency limit per method, default 0 (none).
    Actives, u32, ACTIVES_KEY, 0);
num_param!(/// Provider concurrency limit per method, default 0 (none).
    Executes, u32, EXECUTES_KEY, 0);
num_param!(/// Maximum body size, default 8 MiB; 0 or less disables the check.
    Payload, i64, PAYLOAD_KEY, 8 * 1024 * 1024);
num_param!(/// Forking parallelism, default 2.
    Forks, u32, FORKS_KEY, 2);
num_param!(/// Consistent-hash virtual nodes, default 160.
    HashNodes, u32, HASH_NODES_KEY, 160);
bool_param!(/// Sticky invoker, default false.
    Sticky, STICKY_KEY, false);
bool_param!(/// Provider availability check at start, default true.
    Check, CHECK_KEY, true);
bool_param!(/// Ephemeral registration, default true.
    Dynamic, DYNAMIC_KEY, true);

/// Defaults of string-valued keys.
pub mod defaults {
    /// Default load balance.
    pub const LOADBALANCE: &str = "random";
    /// Default cluster strategy.
    pub const CLUSTER: &str = "failover";
    /// Default protocol.
    pub const PROTOCOL: &str = "dubbo";
    /// Default serialization.
    pub const SERIALIZATION: &str = "hessian2";
    /// Default dispatcher.
    pub const DISPATCHER: &str = "all";
    /// Dubbo protocol version string.
    pub const DUBBO_VERSION: &str = "2.0.2";
    /// Default dubbo port.
    pub const DUBBO_PORT: u16 = 20880;
    /// Default triple port.
    pub const TRIPLE_PORT: u16 = 50051;
    /// Default version when none is set.
    pub const VERSION: &str = "0.0.0";
}
