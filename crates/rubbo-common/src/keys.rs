//! Parameter key names and typed parameters with Dubbo's defaults.
//!
//! Every URL key Rubbo reads is a constant here, once, with Java's name (`TIMEOUT_KEY`
//! is Java's `CommonConstants.TIMEOUT_KEY`), and every default lives in one typed
//! parameter. Typed parameters follow linkerd's `Param<T>` idea: `url.param::<Timeout>()`
//! gives the value with the default applied, `url.method_param::<Timeout>(m)` the
//! method-level value (`{m}.timeout`, then `timeout`), [`crate::resolve::lookup_param`]
//! the value across separate consumer / provider / override URLs. String-valued keys
//! with a default implement [`StrParam`] (`url.str_param::<Dispatcher>()`). The plain
//! `DEFAULT` constant of each typed parameter (`Payload::DEFAULT`) is the one to use
//! where a default is needed without a URL (a config struct's `Default`).
//!
//! # Adding a key
//!
//! 1. Add the name to the `keys!` table below, spelled as Java spells it (check
//!    `/work/shared/reference/dubbo-wire-reference.md` and Java's `*Constants.java`);
//!    a key Java does not have says so in its doc ("Rubbo only").
//! 2. If it has a default, declare a typed parameter with the macro of its kind:
//!    `ms_param!` (milliseconds, read as a [`Duration`], negative = 0), `num_param!`
//!    (a number of the given type), `bool_param!` (`true`, case-insensitive, is true)
//!    or `str_param!` (a string; absent or empty gives the default). Name the Java
//!    default in its doc. A key read with two defaults in Java (`retries`: 2 for
//!    failover, 3 for failback) gets one typed parameter per default.
//! 3. Read it only through the typed parameter (or, without a default, through the
//!    constant): never `url.get_param("literal")` outside this module.
//!
//! ```
//! use rubbo_common::keys::{Dispatcher, Retries, Timeout};
//! use rubbo_common::Url;
//!
//! let url = Url::parse("dubbo://h:1/S?timeout=250&echo.retries=0").unwrap();
//! assert_eq!(url.param::<Timeout>().as_millis(), 250);
//! assert_eq!(url.method_param::<Retries>("echo"), 0);
//! assert_eq!(url.method_param::<Retries>("other"), Retries::DEFAULT);
//! assert_eq!(url.str_param::<Dispatcher>(), "all");
//! ```

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
    /// Consumer: calls waiting for a reply on one dubbo-protocol connection before
    /// new calls are refused at once (Rubbo only: Java 3.3 has no such bound, its
    /// `DefaultFuture` map grows without limit).
    MAX_PENDING_KEY = "max.pending";
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
    /// Config center namespace (ZooKeeper: the root node, `/{namespace}/config`).
    NAMESPACE_KEY = "namespace";
    /// Config center root path (`dubbo.config-center.root-path`), over namespace and
    /// base path.
    CONFIG_CENTER_ROOT_PATH_KEY = "dubbo.config-center.root-path";
    /// Config center base path under the namespace (`dubbo.config-center.base-path`,
    /// default `/config`).
    CONFIG_CENTER_BASE_PATH_KEY = "dubbo.config-center.base-path";
    /// On a registry: whether it serves as the config center when none is configured
    /// (unset: yes, if its protocol has one).
    USE_AS_CONFIG_CENTER_KEY = "use-as-config-center";
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
    /// The Rubbo release of a provider or consumer (Rubbo only).
    RUBBO_VERSION_KEY = "rubbo";
    /// The methods of a provider that Triple serves in IDL (protobuf) mode, comma
    /// separated: the request and response are bare protobuf messages, not wrappers
    /// (Rubbo only; written from the service descriptor, as Java decides per method
    /// from its types in `ReflectionPackableMethod`).
    IDL_METHODS_KEY = "idl-methods";
    /// The provider URL's streaming IDL methods and their shapes, `name:kind` comma
    /// separated, kind `client`, `server` or `bidi` (Rubbo only; written from the
    /// service descriptor, so Triple reads their messages as a stream).
    STREAM_METHODS_KEY = "stream-methods";
    /// Whether the QoS server starts (Java's `QosConstants.QOS_ENABLE`).
    QOS_ENABLE_KEY = "qos.enable";
    /// Whether a QoS server that cannot start fails the application (Java's `QOS_CHECK`).
    QOS_CHECK_KEY = "qos.check";
    /// The host the QoS server binds (Java's `QOS_HOST`); unset: every interface.
    QOS_HOST_KEY = "qos.host";
    /// The QoS port (Java's `QOS_PORT`).
    QOS_PORT_KEY = "qos.port";
    /// Whether QoS connections from foreign (non-loopback) peers are accepted (Java's
    /// `ACCEPT_FOREIGN_IP`).
    ACCEPT_FOREIGN_IP_KEY = "qos.accept.foreign.ip";
    /// Foreign peers (IPs and CIDR ranges, comma separated) with the PROTECTED level
    /// (Java's `ACCEPT_FOREIGN_IP_WHITELIST`).
    ACCEPT_FOREIGN_IP_WHITELIST_KEY = "qos.accept.foreign.ip.whitelist";
    /// The permission level of anonymous (foreign, not whitelisted) peers (Java's
    /// `ANONYMOUS_ACCESS_PERMISSION_LEVEL`).
    ANONYMOUS_ACCESS_PERMISSION_LEVEL_KEY = "qos.anonymous.access.permission.level";
    /// Commands anonymous peers may run whatever their level (Java's
    /// `ANONYMOUS_ACCESS_ALLOW_COMMANDS`).
    ANONYMOUS_ACCESS_ALLOW_COMMANDS_KEY = "qos.anonymous.access.allow.commands";
    /// Whether metrics are collected and exported (Rubbo only: Java collects whenever
    /// its metrics module is present; `dubbo.metrics.enabled`).
    METRICS_ENABLED_KEY = "metrics.enabled";
    /// The metrics protocol, `prometheus` or `default` (Java's
    /// `MetricsConfig.protocol`, `dubbo.metrics.protocol`); setting it turns
    /// metrics on.
    METRICS_PROTOCOL_KEY = "metrics.protocol";
    /// Whether calls are counted (Java's `MetricsConfig.enableRpc`,
    /// `dubbo.metrics.enable-rpc`).
    METRICS_ENABLE_RPC_KEY = "metrics.enable-rpc";
    /// `METHOD` or `SERVICE`: one series per method or per service (Java's
    /// `MetricsConfig.rpcLevel`, `dubbo.metrics.rpc-level`).
    METRICS_RPC_LEVEL_KEY = "metrics.rpc-level";
    /// Java's `dubbo.metrics.prometheus.exporter.enabled`; Java 3.3 serves the
    /// Prometheus text on the QoS port only, and so does Rubbo: `true` turns metrics
    /// on.
    PROMETHEUS_EXPORTER_ENABLED_KEY = "metrics.prometheus.exporter.enabled";
    /// Whether response times also go to Java's histogram (Java's
    /// `HistogramConfig.enabled`, `dubbo.metrics.histogram.enabled`).
    METRICS_HISTOGRAM_ENABLED_KEY = "metrics.histogram.enabled";
    /// A registry URL's cluster name (Java's `RegistryConstants.REGISTRY_CLUSTER_KEY`),
    /// the `registry_cluster` label of the registry metrics; `default` when absent.
    REGISTRY_CLUSTER_KEY = "REGISTRY_CLUSTER";
    /// Whether Java's sliding-window aggregates are kept (Java's
    /// `AggregationConfig.enabled`, `dubbo.metrics.aggregation.enabled`).
    METRICS_AGGREGATION_ENABLED_KEY = "metrics.aggregation.enabled";
    /// Panes per aggregation window (`dubbo.metrics.aggregation.bucket-num`).
    METRICS_AGGREGATION_BUCKET_NUM_KEY = "metrics.aggregation.bucket-num";
    /// The aggregation window in seconds
    /// (`dubbo.metrics.aggregation.time-window-seconds`).
    METRICS_AGGREGATION_TIME_WINDOW_KEY = "metrics.aggregation.time-window-seconds";
    /// Whether calls are traced (Java's `TracingConfig.enabled`,
    /// `dubbo.tracing.enabled`).
    TRACING_ENABLED_KEY = "tracing.enabled";
    /// The share of new traces sampled, 0 to 1 (Java's `SamplingConfig.probability`,
    /// `dubbo.tracing.sampling.probability`, default 0.1); a call with a caller's
    /// `traceparent` follows the caller's decision.
    TRACING_SAMPLING_PROBABILITY_KEY = "tracing.sampling.probability";
    /// The OTLP collector the spans go to, gRPC (Java's `ExporterConfig.OtlpConfig`,
    /// `dubbo.tracing.tracing-exporter.otlp-config.endpoint`, e.g.
    /// `http://127.0.0.1:4317`); set, with tracing on, it turns the export on.
    TRACING_OTLP_ENDPOINT_KEY = "tracing.tracing-exporter.otlp-config.endpoint";
    /// The time one export may take (`...otlp-config.timeout`, default 10s).
    TRACING_OTLP_TIMEOUT_KEY = "tracing.tracing-exporter.otlp-config.timeout";
    /// `gzip` or `none` (`...otlp-config.compression-method`, default `none`).
    TRACING_OTLP_COMPRESSION_KEY = "tracing.tracing-exporter.otlp-config.compression-method";
    /// The prefix of the headers sent with each export
    /// (`...otlp-config.headers.<name>=<value>`).
    TRACING_OTLP_HEADERS_PREFIX = "tracing.tracing-exporter.otlp-config.headers.";
    /// The server's certificate chain, a PEM file (Java's `SslConfig`,
    /// `dubbo.ssl.server-key-cert-chain-path`). With the private key it turns TLS on for
    /// every server the process binds.
    SSL_SERVER_KEY_CERT_CHAIN_PATH_KEY = "server-key-cert-chain-path";
    /// The server's private key, a PEM file (`dubbo.ssl.server-private-key-path`).
    SSL_SERVER_PRIVATE_KEY_PATH_KEY = "server-private-key-path";
    /// The password of an encrypted server key (`dubbo.ssl.server-key-password`).
    SSL_SERVER_KEY_PASSWORD_KEY = "server-key-password";
    /// The CAs a server trusts for client certificates, a PEM file
    /// (`dubbo.ssl.server-trust-cert-collection-path`); when set, clients must present
    /// a certificate they sign (mutual TLS).
    SSL_SERVER_TRUST_CERT_COLLECTION_PATH_KEY = "server-trust-cert-collection-path";
    /// The client's certificate chain, a PEM file (`dubbo.ssl.client-key-cert-chain-path`).
    SSL_CLIENT_KEY_CERT_CHAIN_PATH_KEY = "client-key-cert-chain-path";
    /// The client's private key, a PEM file (`dubbo.ssl.client-private-key-path`).
    SSL_CLIENT_PRIVATE_KEY_PATH_KEY = "client-private-key-path";
    /// The password of an encrypted client key (`dubbo.ssl.client-key-password`).
    SSL_CLIENT_KEY_PASSWORD_KEY = "client-key-password";
    /// The CAs a client trusts for server certificates, a PEM file
    /// (`dubbo.ssl.client-trust-cert-collection-path`).
    SSL_CLIENT_TRUST_CERT_COLLECTION_PATH_KEY = "client-trust-cert-collection-path";
    /// Asynchronous call flag (attachment).
    ASYNC_KEY = "async";
    /// The remaining timeout of a countdown call, in ms (attachment).
    TIMEOUT_ATTACHMENT_KEY = "_TO";
    /// One deadline per consumer call, shared by its retries.
    ENABLE_TIMEOUT_COUNTDOWN_KEY = "enable-timeout-countdown";
    /// Provider calls allowed per `tps.interval`.
    TPS_KEY = "tps";
    /// The TPS window, in ms.
    TPS_INTERVAL_KEY = "tps.interval";
    /// Access log: `true` (to the log) or a file path.
    ACCESS_LOG_KEY = "accesslog";
    /// Whether a provider, an override or a router rule is enabled.
    ENABLED_KEY = "enabled";
    /// Whether a provider is disabled (an override rule's `disabled: true`); when set it
    /// wins over `enabled` (Java's `DISABLED_KEY`).
    DISABLED_KEY = "disabled";
    /// Provider classifier (registry matching).
    CLASSIFIER_KEY = "classifier";
    /// Version of an override rule.
    CONFIG_VERSION_KEY = "configVersion";
    /// The rule of a `condition://` router URL (URL-encoded).
    RULE_KEY = "rule";
    /// Whether a router applies even when it leaves no provider.
    FORCE_KEY = "force";
    /// Router priority.
    PRIORITY_KEY = "priority";
    /// Router kind of a `route://` URL.
    ROUTER_KEY = "router";
    /// Protocols a consumer accepts (comma list).
    PROTOCOL_KEY = "protocol";
    /// Whether a call expects an answer (`false` = one-way).
    RETURN_KEY = "return";
    /// Server shutdown wait in ms.
    SHUTDOWN_TIMEOUT_KEY = "shutdown.timeout";
    /// Triple: which transport serves HTTP/2 with prior knowledge on a provider:
    /// `native` (Rubbo's own HTTP/2 server, the default) or `hyper`. Rubbo's own key:
    /// Java has no such choice.
    TRIPLE_TRANSPORT_KEY = "triple.transport";
    /// Triple: HTTP/2 SETTINGS_INITIAL_WINDOW_SIZE, per stream (Java's
    /// `dubbo.protocol.triple.initial-window-size`; the URL spelling is Rubbo's).
    TRIPLE_INITIAL_WINDOW_SIZE_KEY = "triple.initial-window-size";
    /// Triple: HTTP/2 SETTINGS_MAX_FRAME_SIZE (Java's `dubbo.protocol.triple.max-frame-size`).
    TRIPLE_MAX_FRAME_SIZE_KEY = "triple.max-frame-size";
    /// Triple: HTTP/2 SETTINGS_MAX_HEADER_LIST_SIZE (Java's
    /// `dubbo.protocol.triple.max-header-list-size`).
    TRIPLE_MAX_HEADER_LIST_SIZE_KEY = "triple.max-header-list-size";
    /// Triple: HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS a server allows (Java's
    /// `dubbo.protocol.triple.max-concurrent-streams`).
    TRIPLE_MAX_CONCURRENT_STREAMS_KEY = "triple.max-concurrent-streams";
    /// The IP a service registers with.
    REGISTER_IP_KEY = "register.ip";
    /// How long a reference waits at start for its first providers, in ms (Rubbo only).
    CHECK_TIMEOUT_KEY = "check.timeout";
    /// Cluster: whether an unavailable provider is reselected.
    CLUSTER_AVAILABLE_CHECK_KEY = "cluster.availablecheck";
    /// Failback: bound of pending background retries.
    FAIL_BACK_TASKS_KEY = "failbacktasks";
    /// Broadcast: percentage of failures after which the call stops.
    BROADCAST_FAIL_PERCENT_KEY = "broadcast.fail.percent";
    /// Registry URL: the cache file path.
    FILE_KEY = "file";
    /// Registry URL: `file.cache=false` disables the cache file (Java 3.3 spells it
    /// `file-cache`, `REGISTRY_LOCAL_FILE_CACHE_ENABLED`).
    FILE_CACHE_KEY = "file.cache";
    /// Registry URL: the failback retry period in ms (Java's `REGISTRY_RETRY_PERIOD_KEY`).
    RETRY_PERIOD_KEY = "retry.period";
    /// Registry URL: the delay in ms that batches a burst of changes into one
    /// notification (Rubbo only).
    NOTIFY_DELAY_KEY = "notify.delay";
    /// Registry URL: more servers, `h:p,h:p`.
    BACKUP_KEY = "backup";
    /// Registry URL: the ZooKeeper session timeout in ms.
    SESSION_KEY = "session";
    /// Registry URL: the ZooKeeper session timeout in ms when `session` is absent
    /// (Rubbo only; not in Java 3.3).
    ZK_SESSION_EXPIRE_KEY = "zk.session.expire";
    /// Registry URL: how a ZooKeeper subscription watches a category's children
    /// (`auto`, `persistent`, `oneshot`; Rubbo only).
    ZK_WATCH_KEY = "zk.watch";
    /// Registry URL: with `true`, an empty `providers` list is not delivered.
    ENABLE_EMPTY_PROTECTION_KEY = "enable-empty-protection";
    /// Dev registry URL: lease of a registration in ms (Rubbo only).
    LEASE_KEY = "lease";
    /// Category value: providers' URLs.
    PROVIDERS_CATEGORY = "providers";
    /// Category value: consumers' URLs.
    CONSUMERS_CATEGORY = "consumers";
    /// Category value: route rules (`route://`).
    ROUTERS_CATEGORY = "routers";
    /// Category value: override rules (`override://`).
    CONFIGURATORS_CATEGORY = "configurators";
    /// "Any" in interface, group, version, category and classifier matching.
    ANY_VALUE = "*";
    /// Marks an override URL converted from an older rule format.
    COMPATIBLE_CONFIG_KEY = "compatible_config";
    /// Provider addresses an override URL is limited to (comma separated).
    OVERRIDE_PROVIDERS_KEY = "providerAddresses";
    /// Value of [`ROUTER_KEY`] naming a condition router.
    CONDITION_ROUTER = "condition";
    /// The host of a rule that applies to every address.
    ANYHOST_VALUE = "0.0.0.0";
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
    /// A tag routing rule (`tag://`).
    pub const TAG: &str = "tag";
    /// A script routing rule (`script://`).
    pub const SCRIPT: &str = "script";
    /// The registry protocol (`registry://...&registry=zookeeper`).
    pub const REGISTRY: &str = "registry";
    /// The application-level registry protocol
    /// (`service-discovery-registry://...&registry=zookeeper`).
    pub const SERVICE_DISCOVERY_REGISTRY: &str = "service-discovery-registry";
    /// A consumer's own URL (`consumer://host/interface`).
    pub const CONSUMER: &str = "consumer";
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

/// A string-valued URL parameter with a default; absent or empty gives the default.
///
/// ```
/// use rubbo_common::keys::StrParam;
/// use rubbo_common::Url;
///
/// struct Codec;
/// impl StrParam for Codec {
///     const KEY: &'static str = "codec";
///     const DEFAULT: &'static str = "dubbo";
/// }
///
/// assert_eq!(Url::parse("x://h?codec=tri").unwrap().str_param::<Codec>(), "tri");
/// assert_eq!(Url::parse("x://h?codec=").unwrap().str_param::<Codec>(), "dubbo");
/// ```
pub trait StrParam {
    /// The parameter key.
    const KEY: &'static str;
    /// The value when the key is absent or empty.
    const DEFAULT: &'static str;
}

/// Milliseconds as Java reads them: a decimal `i64`, negative counts as zero.
fn parse_ms(raw: &str) -> Option<Duration> {
    raw.trim()
        .parse::<i64>()
        .ok()
        .map(|v| Duration::from_millis(v.max(0).unsigned_abs()))
}

/// A boolean as Java reads it: `true` (case-insensitive) is true, anything else false.
fn parse_bool(raw: &str) -> Option<bool> {
    Some(raw.trim().eq_ignore_ascii_case("true"))
}

macro_rules! ms_param {
    ($(#[$m:meta])* $name:ident, $key:expr, $default_ms:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl $name {
            /// The default, used when the key is absent or does not parse.
            pub const DEFAULT: Duration = Duration::from_millis($default_ms);
        }
        impl Param for $name {
            type Value = Duration;
            const KEY: &'static str = $key;
            fn default_value() -> Duration {
                Self::DEFAULT
            }
            fn parse(raw: &str) -> Option<Duration> {
                parse_ms(raw)
            }
        }
    };
}

macro_rules! num_param {
    ($(#[$m:meta])* $name:ident, $ty:ty, $key:expr, $default:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl $name {
            /// The default, used when the key is absent or does not parse.
            pub const DEFAULT: $ty = $default;
        }
        impl Param for $name {
            type Value = $ty;
            const KEY: &'static str = $key;
            fn default_value() -> $ty {
                Self::DEFAULT
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
        impl $name {
            /// The default, used when the key is absent.
            pub const DEFAULT: bool = $default;
        }
        impl Param for $name {
            type Value = bool;
            const KEY: &'static str = $key;
            fn default_value() -> bool {
                Self::DEFAULT
            }
            fn parse(raw: &str) -> Option<bool> {
                parse_bool(raw)
            }
        }
    };
}

macro_rules! str_param {
    ($(#[$m:meta])* $name:ident, $key:expr, $default:expr) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;
        impl StrParam for $name {
            const KEY: &'static str = $key;
            const DEFAULT: &'static str = $default;
        }
    };
}

// Call and connection settings.
ms_param!(/// Call timeout, default 1000 ms (Java's `DEFAULT_TIMEOUT`, dubbo protocol).
    Timeout, TIMEOUT_KEY, 1000);
ms_param!(/// Connect timeout, default 3000 ms (Java's `DEFAULT_CONNECT_TIMEOUT`).
    ConnectTimeout, CONNECT_TIMEOUT_KEY, 3000);
ms_param!(/// Heartbeat interval, default 60 000 ms (Java's `DEFAULT_HEARTBEAT`).
    Heartbeat, HEARTBEAT_KEY, 60_000);
ms_param!(/// Server shutdown wait, default 10 000 ms (Java's `DEFAULT_SERVER_SHUTDOWN_TIMEOUT`).
    ShutdownTimeout, SHUTDOWN_TIMEOUT_KEY, 10_000);
num_param!(/// Maximum body size, default 8 MiB (Java's `DEFAULT_PAYLOAD`); 0 or less disables
    /// the check.
    Payload, i64, PAYLOAD_KEY, 8 * 1024 * 1024);
num_param!(/// Pending calls per consumer connection, dubbo and Triple (a Triple stream counts
    /// until its replies end), default 65 536 (Rubbo only); a call over it fails at once
    /// with a retryable "limit exceeded" error, so failover tries another provider. 0 disables the bound. The default is far above any
    /// normal workload (a connection that has 65 536 calls unanswered has a provider
    /// that stopped answering) and caps the memory those calls hold at a few MiB.
    MaxPending, usize, MAX_PENDING_KEY, 65_536);
num_param!(/// Triple: per-stream HTTP/2 window, default 8 MiB (Java's `DEFAULT_INITIAL_WINDOW_SIZE`).
    TripleInitialWindowSize, u32, TRIPLE_INITIAL_WINDOW_SIZE_KEY, 8_388_608);
num_param!(/// Triple: largest HTTP/2 frame accepted, default 8 MiB (Java's `DEFAULT_MAX_FRAME_SIZE`).
    TripleMaxFrameSize, u32, TRIPLE_MAX_FRAME_SIZE_KEY, 8_388_608);
num_param!(/// Triple: largest header list accepted, default 32 KiB (Java's
    /// `DEFAULT_MAX_HEADER_LIST_SIZE`).
    TripleMaxHeaderListSize, u32, TRIPLE_MAX_HEADER_LIST_SIZE_KEY, 32_768);
num_param!(/// Triple: concurrent streams per connection a server allows, default 2^31-1
    /// (Java's `DEFAULT_MAX_CONCURRENT_STREAMS`).
    TripleMaxConcurrentStreams, u32, TRIPLE_MAX_CONCURRENT_STREAMS_KEY, 2_147_483_647);
num_param!(/// Connections per address, default 0 (shared).
    Connections, u32, CONNECTIONS_KEY, 0);
num_param!(/// Consumer concurrency limit per method, default 0 (none).
    Actives, u32, ACTIVES_KEY, 0);
num_param!(/// Provider concurrency limit per method, default 0 (none).
    Executes, u32, EXECUTES_KEY, 0);
num_param!(/// Provider calls allowed per `tps.interval` for a service, default -1 (no limit;
    /// 0 or less means none, Java's `TpsLimitFilter`).
    Tps, i64, TPS_KEY, -1);
ms_param!(/// The TPS window, default 60 000 ms (Java's `DEFAULT_TPS_LIMIT_INTERVAL`).
    TpsInterval, TPS_INTERVAL_KEY, 60_000);
bool_param!(/// Whether a call expects an answer, default true (`false` = one-way).
    Return, RETURN_KEY, true);
str_param!(/// Provider dispatcher, default `all`.
    Dispatcher, DISPATCHER_KEY, defaults::DISPATCHER);
str_param!(/// Provider executor kind, default `fixed` (Java's `DEFAULT_THREADPOOL`); see
    /// [`crate::executor::ExecutorBound`] for what each kind bounds.
    ThreadPool, THREADPOOL_KEY, defaults::THREADPOOL);
num_param!(/// Provider executions at once, default 200 (Java's `DEFAULT_THREADS`, the size of
    /// the `fixed` pool); the `cached` and `eager` pools have no bound unless it is set.
    Threads, i64, THREADS_KEY, 200);
num_param!(/// Provider executions waiting for a free slot, default 0 (Java's `DEFAULT_QUEUES`:
    /// no queue, a call over `threads` is refused at once); below 0 the queue has no bound.
    Queues, i64, QUEUES_KEY, 0);

// Cluster, load balance and routing.
num_param!(/// Failover retries, default 2 (Java's `DEFAULT_RETRIES`); attempts = retries + 1.
    Retries, i64, RETRIES_KEY, 2);
num_param!(/// Failback background retries: the same `retries` key with Java's
    /// `DEFAULT_FAILBACK_TIMES`, 3 (0 or less also means 3).
    FailbackRetries, i64, RETRIES_KEY, 3);
num_param!(/// Failback: pending background retries, default 100 (Java's `DEFAULT_FAILBACK_TASKS`).
    FailbackTasks, i64, FAIL_BACK_TASKS_KEY, 100);
num_param!(/// Forking parallelism, default 2 (Java's `DEFAULT_FORKS`); 0 or less calls all.
    Forks, i64, FORKS_KEY, 2);
num_param!(/// Broadcast: failure percentage (0-100) that stops the call, default 100.
    BroadcastFailPercent, i64, BROADCAST_FAIL_PERCENT_KEY, 100);
bool_param!(/// Whether the cluster reselects an unavailable provider, default true.
    ClusterAvailableCheck, CLUSTER_AVAILABLE_CHECK_KEY, true);
bool_param!(/// Sticky invoker, default false.
    Sticky, STICKY_KEY, false);
num_param!(/// Provider weight, default 100 (Java's `DEFAULT_WEIGHT`).
    Weight, i64, WEIGHT_KEY, 100);
ms_param!(/// Warm-up period, default 600 000 ms (Java's `DEFAULT_WARMUP`).
    Warmup, WARMUP_KEY, 600_000);
num_param!(/// Provider start time (ms since epoch), default 0 (unknown: no warm-up).
    Timestamp, i64, TIMESTAMP_KEY, 0);
num_param!(/// Consistent-hash virtual nodes, default 160.
    HashNodes, i64, HASH_NODES_KEY, 160);
str_param!(/// Consistent-hash argument indexes, default `0`.
    HashArguments, HASH_ARGUMENTS_KEY, "0");
bool_param!(/// Whether a router rule, an override or a provider is enabled, default true.
    Enabled, ENABLED_KEY, true);
bool_param!(/// Whether a router applies even when it leaves no provider, default false.
    Force, FORCE_KEY, false);
num_param!(/// Router priority, default 0.
    Priority, i64, PRIORITY_KEY, 0);

// Registries.
bool_param!(/// Provider availability check at start, default true.
    Check, CHECK_KEY, true);
bool_param!(/// Ephemeral registration, default true.
    Dynamic, DYNAMIC_KEY, true);
bool_param!(/// Whether a service or reference is registered, default true.
    Register, REGISTER_KEY, true);
bool_param!(/// Whether a reference subscribes, default true.
    Subscribe, SUBSCRIBE_KEY, true);
ms_param!(/// How long a `check=true` reference waits at start for its first provider list,
    /// default 5000 ms (Rubbo only).
    CheckTimeout, CHECK_TIMEOUT_KEY, 5000);
str_param!(/// The category of a URL, default `providers`.
    Category, CATEGORY_KEY, PROVIDERS_CATEGORY);
str_param!(/// The registry type inside a `registry://` URL, default `dubbo` (Java's
    /// `DEFAULT_REGISTRY`).
    RegistryType, REGISTRY_KEY, "dubbo");
bool_param!(/// Registry URL: whether the cache file is kept, default true.
    FileCache, FILE_CACHE_KEY, true);
ms_param!(/// Registry URL: failback retry period, default 5000 ms (Java's
    /// `DEFAULT_REGISTRY_RETRY_PERIOD`).
    RetryPeriod, RETRY_PERIOD_KEY, 5000);
ms_param!(/// Registry URL: the bound on one registry operation and the wait for a
    /// ZooKeeper session at start, default 5000 ms (Java's ZooKeeper client waits
    /// `DEFAULT_CONNECTION_TIMEOUT_MS`, 30 000).
    RegistryTimeout, TIMEOUT_KEY, 5000);
ms_param!(/// Registry URL: the notification batching delay, default 10 ms (Rubbo only).
    NotifyDelay, NOTIFY_DELAY_KEY, 10);
str_param!(/// Registry URL: the ZooKeeper root, `/` + `group`, default `dubbo` (Java's
    /// `ZookeeperRegistry.DEFAULT_ROOT`).
    ZkRoot, GROUP_KEY, "dubbo");
ms_param!(/// Registry URL: the ZooKeeper session timeout, default 60 000 ms (Java's
    /// `DEFAULT_SESSION_TIMEOUT_MS`).
    SessionTimeout, SESSION_KEY, ZK_SESSION_TIMEOUT_MS);
ms_param!(/// Registry URL: the ZooKeeper session timeout when `session` is absent, with
    /// the same default (Rubbo only).
    ZkSessionExpire, ZK_SESSION_EXPIRE_KEY, ZK_SESSION_TIMEOUT_MS);
str_param!(/// Registry URL: how ZooKeeper categories are watched, default `auto` (Rubbo only).
    ZkWatch, ZK_WATCH_KEY, "auto");
bool_param!(/// Registry URL: empty-providers protection, default false.
    EnableEmptyProtection, ENABLE_EMPTY_PROTECTION_KEY, false);
ms_param!(/// Dev registry URL: registration lease, default 3000 ms (Rubbo only).
    Lease, LEASE_KEY, 3000);

// QoS.
bool_param!(/// Whether the QoS server starts, default true (Java's `QosProtocolWrapper`; Rubbo
    /// starts one only when asked, see `rubbo::RubboBuilder::qos_port`).
    QosEnable, QOS_ENABLE_KEY, true);
bool_param!(/// Whether a QoS bind failure fails the application, default false (Java logs
    /// and goes on).
    QosCheck, QOS_CHECK_KEY, false);
num_param!(/// The QoS port, default 22222 (Java's `QosConstants.DEFAULT_PORT`).
    QosPort, u16, QOS_PORT_KEY, 22222);

// Metrics and tracing.
bool_param!(/// Whether metrics are on, default false (Rubbo only).
    MetricsEnabled, METRICS_ENABLED_KEY, false);
bool_param!(/// Whether calls are counted once metrics are on, default true.
    MetricsEnableRpc, METRICS_ENABLE_RPC_KEY, true);
str_param!(/// The metrics level, default `METHOD` (Java's `MetricsLevel.METHOD`).
    MetricsRpcLevel, METRICS_RPC_LEVEL_KEY, "METHOD");
bool_param!(/// Whether Java's Prometheus exporter switch is on, default false.
    PrometheusExporterEnabled, PROMETHEUS_EXPORTER_ENABLED_KEY, false);
bool_param!(/// Whether the response time histogram is kept, default false.
    MetricsHistogramEnabled, METRICS_HISTOGRAM_ENABLED_KEY, false);
bool_param!(/// Whether the sliding-window aggregates are kept, default false.
    MetricsAggregationEnabled, METRICS_AGGREGATION_ENABLED_KEY, false);
num_param!(/// Panes per aggregation window, default 10 (Java's `DEFAULT_BUCKET_NUM`).
    MetricsAggregationBucketNum, u32, METRICS_AGGREGATION_BUCKET_NUM_KEY, 10);
num_param!(/// The aggregation window in seconds, default 120 (Java's
    /// `DEFAULT_TIME_WINDOW_SECONDS`).
    MetricsAggregationTimeWindow, u64, METRICS_AGGREGATION_TIME_WINDOW_KEY, 120);
bool_param!(/// Whether calls are traced, default false (Java's `TracingConfig`).
    TracingEnabled, TRACING_ENABLED_KEY, false);
bool_param!(/// Whether foreign QoS peers are accepted, default false.
    AcceptForeignIp, ACCEPT_FOREIGN_IP_KEY, false);
str_param!(/// The anonymous QoS permission level, default `PUBLIC`.
    AnonymousAccessPermissionLevel, ANONYMOUS_ACCESS_PERMISSION_LEVEL_KEY, "PUBLIC");

// Application-level service discovery (issue #15).
keys! {
    /// Monitor address (excluded from service metadata).
    MONITOR_KEY = "monitor";
    /// Bind address (excluded from service metadata).
    BIND_IP_KEY = "bind.ip";
    /// Bind port (excluded from service metadata).
    BIND_PORT_KEY = "bind.port";
    /// Validation (excluded from service metadata).
    VALIDATION_KEY = "validation";
    /// Interfaces (excluded from service metadata).
    INTERFACES_KEY = "interfaces";
    /// IPv6 address of an instance.
    IPV6_KEY = "ipv6";
    /// Codec.
    CODEC_KEY = "codec";
    /// Exchanger.
    EXCHANGER_KEY = "exchanger";
    /// Port (in the MetadataService URL parameters of an instance).
    PORT_KEY = "port";
    /// The packable method factory (one of the provider keys Java registers).
    PACKABLE_METHOD_FACTORY_KEY = "serialize.packable.factory";
    /// Authentication switch.
    AUTH_KEY = "auth";
    /// Authenticator.
    AUTHENTICATOR_KEY = "authenticator";
    /// User name (authentication).
    USERNAME_KEY = "username";
    /// Password (authentication).
    PASSWORD_KEY = "password";
    /// Application URL: where services are registered, `interface`, `instance` or
    /// `all` (Java's `dubbo.application.register-mode`).
    REGISTER_MODE_KEY = "register-mode";
    /// Application URL: the metadata storage type, `local` or `remote` (Java's
    /// `dubbo.application.metadata-type`).
    METADATA_TYPE_KEY = "metadata-type";
    /// Instance metadata: the revision of the application's MetadataInfo.
    EXPORTED_SERVICES_REVISION_PROPERTY_NAME = "dubbo.metadata.revision";
    /// Instance metadata: the metadata storage type.
    METADATA_STORAGE_TYPE_PROPERTY_NAME = "dubbo.metadata.storage-type";
    /// Instance metadata: the protocols and ports, a JSON list.
    ENDPOINTS = "dubbo.endpoints";
    /// Instance metadata: the MetadataService URL parameters, a JSON object.
    METADATA_SERVICE_URL_PARAMS_PROPERTY_NAME = "dubbo.metadata-service.url-params";
    /// Instance metadata: the MetadataService version to call (`1.0.0`, `2.0.0`).
    METADATA_SERVICE_VERSION_NAME = "meta-v";
    /// MetadataService parameter: its protocol (Java's `metadata-service-protocol`).
    METADATA_SERVICE_PROTOCOL_KEY = "metadata-service-protocol";
    /// The interface name of MetadataService V1.
    METADATA_SERVICE_INTERFACE = "org.apache.dubbo.metadata.MetadataService";
    /// The version of MetadataService V1.
    METADATA_SERVICE_VERSION = "1.0.0";
    /// The interface (proto `package.Service`) of MetadataService V2, on Triple.
    METADATA_SERVICE_V2_INTERFACE = "org.apache.dubbo.metadata.MetadataServiceV2";
    /// The version of MetadataService V2 (also the `meta-v` of instances serving it).
    METADATA_SERVICE_V2_VERSION = "2.0.0";
    /// Metadata report: CAS retries of the mapping update (Java default 10).
    CAS_RETRY_TIMES_KEY = "dubbo.metadata-report.cas-retry-times";
    /// Metadata report: the bound of the random wait between CAS retries, ms (Java
    /// default 100).
    CAS_RETRY_WAIT_TIME_KEY = "dubbo.metadata-report.cas-retry-wait-time";
}

str_param!(/// Where a provider registers: `interface`, `instance` or `all` (Java's default,
    /// `DEFAULT_REGISTER_MODE_ALL`).
    RegisterMode, REGISTER_MODE_KEY, "all");
str_param!(/// The metadata storage type, default `local` (MetadataService on the instance).
    MetadataType, METADATA_TYPE_KEY, "local");
num_param!(/// CAS retries of a mapping update, default 10.
    CasRetryTimes, u32, CAS_RETRY_TIMES_KEY, 10);
ms_param!(/// The bound of the random wait between mapping CAS retries, default 100 ms.
    CasRetryWaitTime, CAS_RETRY_WAIT_TIME_KEY, 100);

/// The ZooKeeper session timeout default shared by `session` and `zk.session.expire`.
const ZK_SESSION_TIMEOUT_MS: u64 = 60_000;

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
    /// Default provider executor kind.
    pub const THREADPOOL: &str = "fixed";
    /// Dubbo protocol version string.
    pub const DUBBO_VERSION: &str = "2.0.2";
    /// Default dubbo port.
    pub const DUBBO_PORT: u16 = 20880;
    /// Default triple port.
    pub const TRIPLE_PORT: u16 = 50051;
    /// Default version when none is set.
    pub const VERSION: &str = "0.0.0";
}

/// The server side of Java's `dubbo.ssl.*` keys, as they ride on a provider URL. They
/// describe this process's files, so a URL loses them before it is registered.
pub const SSL_SERVER_KEYS: &[&str] = &[
    SSL_SERVER_KEY_CERT_CHAIN_PATH_KEY,
    SSL_SERVER_PRIVATE_KEY_PATH_KEY,
    SSL_SERVER_KEY_PASSWORD_KEY,
    SSL_SERVER_TRUST_CERT_COLLECTION_PATH_KEY,
];

/// The client side of Java's `dubbo.ssl.*` keys, as they ride on a consumer URL.
pub const SSL_CLIENT_KEYS: &[&str] = &[
    SSL_CLIENT_KEY_CERT_CHAIN_PATH_KEY,
    SSL_CLIENT_PRIVATE_KEY_PATH_KEY,
    SSL_CLIENT_KEY_PASSWORD_KEY,
    SSL_CLIENT_TRUST_CERT_COLLECTION_PATH_KEY,
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Url;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn defaults_are_javas() {
        let none = u("dubbo://h:1/S");
        assert_eq!(none.param::<Timeout>(), Duration::from_millis(1000));
        assert_eq!(none.param::<ConnectTimeout>(), Duration::from_millis(3000));
        assert_eq!(none.param::<Heartbeat>(), Duration::from_millis(60_000));
        assert_eq!(
            none.param::<ShutdownTimeout>(),
            Duration::from_millis(10_000)
        );
        assert_eq!(none.param::<Payload>(), 8_388_608);
        assert_eq!(none.param::<Retries>(), 2);
        assert_eq!(none.param::<FailbackRetries>(), 3);
        assert_eq!(none.param::<FailbackTasks>(), 100);
        assert_eq!(none.param::<Forks>(), 2);
        assert_eq!(none.param::<BroadcastFailPercent>(), 100);
        assert_eq!(none.param::<Weight>(), 100);
        assert_eq!(none.param::<Warmup>(), Duration::from_millis(600_000));
        assert_eq!(none.param::<HashNodes>(), 160);
        assert_eq!(none.str_param::<HashArguments>(), "0");
        assert_eq!(none.str_param::<Dispatcher>(), "all");
        assert_eq!(none.str_param::<Category>(), "providers");
        assert_eq!(none.param::<RetryPeriod>(), Duration::from_millis(5000));
        assert_eq!(
            none.param::<SessionTimeout>(),
            Duration::from_millis(60_000)
        );
        assert!(none.param::<Check>() && none.param::<Dynamic>() && none.param::<Enabled>());
        assert!(none.param::<ClusterAvailableCheck>() && none.param::<Return>());
        assert!(!none.param::<Sticky>() && !none.param::<Force>());
        assert!(!none.param::<EnableEmptyProtection>());
    }

    #[test]
    fn one_key_two_defaults() {
        // Java reads `retries` with 2 in failover and 3 in failback.
        assert_eq!(Retries::KEY, FailbackRetries::KEY);
        let set = u("dubbo://h:1/S?retries=5");
        assert_eq!(set.param::<Retries>(), 5);
        assert_eq!(set.param::<FailbackRetries>(), 5);
        assert_ne!(Retries::DEFAULT, FailbackRetries::DEFAULT);
        // `timeout` on a registry URL is the registry's bound, not the call timeout.
        assert_eq!(RegistryTimeout::KEY, Timeout::KEY);
        assert_eq!(
            u("zookeeper://h:2181").param::<RegistryTimeout>(),
            Duration::from_millis(5000)
        );
    }

    #[test]
    fn values_parse_as_the_callers_read_them() {
        // Negative numbers are kept: failover makes one attempt, forking calls all.
        let neg = u("dubbo://h:1/S?retries=-1&forks=-1&hash.nodes=-4&weight=3000000000");
        assert_eq!(neg.param::<Retries>(), -1);
        assert_eq!(neg.param::<Forks>(), -1);
        assert_eq!(neg.param::<HashNodes>(), -4);
        assert_eq!(
            neg.param::<Weight>(),
            3_000_000_000,
            "clamped by the balancer, not lost"
        );
        // Milliseconds: negative is zero, garbage is the default.
        let ms = u("dubbo://h:1/S?timeout=-5&heartbeat=x");
        assert_eq!(ms.param::<Timeout>(), Duration::ZERO);
        assert_eq!(ms.param::<Heartbeat>(), Heartbeat::DEFAULT);
        // Booleans: `true` in any case; any other present value is false.
        let b = u("dubbo://h:1/S?sticky=TRUE&check=yes");
        assert!(b.param::<Sticky>());
        assert!(!b.param::<Check>());
        // Strings: empty is the default; method level first.
        let s = u("dubbo://h:1/S?dispatcher=&m.hash.arguments=1&methods=m");
        assert_eq!(s.str_param::<Dispatcher>(), "all");
        assert_eq!(s.method_str_param::<HashArguments>("m"), "1");
        assert_eq!(s.method_str_param::<HashArguments>("n"), "0");
    }
}
