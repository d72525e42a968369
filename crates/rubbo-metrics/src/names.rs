//! Java Dubbo 3.3's metric and label names, as its Prometheus registry exports them.
//!
//! Java names a metric with dots (`MetricsKey`: `dubbo.%s.requests.total`, `%s` the
//! side) and Micrometer's Prometheus naming turns the dots into underscores. A
//! counter's name here leaves off the `_total` that the Prometheus text encoder adds
//! back (`dubbo_provider_requests` is scraped as `dubbo_provider_requests_total`, as
//! Java's `dubbo.provider.requests.total` is); gauges keep their whole name.

/// What a per-method metric counts or measures: its name after `dubbo_{side}_`
/// (Java's `MetricsKey`), its help text (Java's description), and whether Java
/// exports the series at 0 before the first event (`DefaultConstants.INIT_DEFAULT_METHOD_KEYS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodKey {
    /// The name after `dubbo_{side}_`, without a counter's `_total`.
    pub suffix: &'static str,
    /// Java's description.
    pub help: &'static str,
    /// Exported at 0 from the method's first appearance.
    pub initialized: bool,
}

const fn key(suffix: &'static str, help: &'static str, initialized: bool) -> MethodKey {
    MethodKey {
        suffix,
        help,
        initialized,
    }
}

/// `dubbo.%s.requests.total`.
pub const REQUESTS: MethodKey = key("requests", "Total Requests", true);
/// `dubbo.%s.requests.succeed.total`.
pub const REQUESTS_SUCCEED: MethodKey = key("requests_succeed", "Total Succeed Requests", true);
/// `dubbo.%s.requests.business.failed.total`: the service answered with an exception.
pub const REQUESTS_BUSINESS_FAILED: MethodKey = key(
    "requests_business_failed",
    "Total Failed Business Requests",
    true,
);
/// `dubbo.%s.requests.timeout.total`.
pub const REQUESTS_TIMEOUT: MethodKey =
    key("requests_timeout", "Total Timeout Failed Requests", false);
/// `dubbo.%s.requests.limit.total`.
pub const REQUESTS_LIMIT: MethodKey = key("requests_limit", "Total Limit Failed Requests", false);
/// `dubbo.%s.requests.unknown.failed.total`.
pub const REQUESTS_UNKNOWN_FAILED: MethodKey = key(
    "requests_unknown_failed",
    "Total Unknown Failed Requests",
    false,
);
/// `dubbo.%s.requests.failed.total`: every failure, whatever its reason.
pub const REQUESTS_FAILED: MethodKey = key("requests_failed", "Total Failed Requests", true);
/// `dubbo.%s.requests.failed.network.total`.
pub const REQUESTS_NETWORK_FAILED: MethodKey = key(
    "requests_failed_network",
    "Total network Failed Requests",
    false,
);
/// `dubbo.%s.requests.failed.service.unavailable.total` (consumer side).
pub const REQUESTS_SERVICE_UNAVAILABLE_FAILED: MethodKey = key(
    "requests_failed_service_unavailable",
    "Total Service Unavailable Failed Requests",
    false,
);
/// `dubbo.%s.requests.failed.codec.total`.
pub const REQUESTS_CODEC_FAILED: MethodKey = key(
    "requests_failed_codec",
    "Total Codec Failed Requests",
    false,
);

/// The counters, in the order they are exported.
pub const COUNTERS: [MethodKey; 10] = [
    REQUESTS,
    REQUESTS_SUCCEED,
    REQUESTS_BUSINESS_FAILED,
    REQUESTS_TIMEOUT,
    REQUESTS_LIMIT,
    REQUESTS_UNKNOWN_FAILED,
    REQUESTS_FAILED,
    REQUESTS_NETWORK_FAILED,
    REQUESTS_SERVICE_UNAVAILABLE_FAILED,
    REQUESTS_CODEC_FAILED,
];

/// `dubbo.%s.requests.processing` (a gauge): calls in flight.
pub const REQUESTS_PROCESSING: MethodKey = key("requests_processing", "Processing Requests", true);

/// `dubbo.%s.rt.milliseconds.last` (a gauge, like the other response times).
pub const RT_LAST: MethodKey = key("rt_milliseconds_last", "Last Response Time", false);
/// `dubbo.%s.rt.milliseconds.min`.
pub const RT_MIN: MethodKey = key("rt_milliseconds_min", "Min Response Time", false);
/// `dubbo.%s.rt.milliseconds.max`.
pub const RT_MAX: MethodKey = key("rt_milliseconds_max", "Max Response Time", false);
/// `dubbo.%s.rt.milliseconds.sum`.
pub const RT_SUM: MethodKey = key("rt_milliseconds_sum", "Sum Response Time", false);
/// `dubbo.%s.rt.milliseconds.avg`.
pub const RT_AVG: MethodKey = key("rt_milliseconds_avg", "Average Response Time", false);

/// `dubbo.%s.rt.milliseconds.histogram`: Java records it in a Micrometer timer, which
/// the Prometheus registry exports in seconds as
/// `dubbo_{side}_rt_milliseconds_histogram_seconds_{bucket,count,sum}`
/// (`dubbo.metrics.histogram.enabled=true`). This is the name after `dubbo_{side}_`.
pub const RT_HISTOGRAM: MethodKey = key(
    "rt_milliseconds_histogram_seconds",
    "Response Time Histogram",
    false,
);
/// The timer's `_max` gauge Micrometer exports beside it: the largest time of the
/// last two minutes, in seconds.
pub const RT_HISTOGRAM_MAX: MethodKey = key(
    "rt_milliseconds_histogram_seconds_max",
    "Response Time Histogram",
    false,
);

/// The sliding-window series of Java's `AggregateMetricsCollector`
/// (`dubbo.metrics.aggregation.enabled=true`), every one a gauge. Names after
/// `dubbo_{side}_`.
pub mod aggregate {
    use super::{MethodKey, key};

    /// `dubbo.%s.requests.total.aggregate`: calls made in the window.
    pub const REQUESTS_TOTAL: MethodKey = key(
        "requests_total_aggregate",
        "Aggregated Total Requests",
        true,
    );
    /// `dubbo.%s.requests.succeed.aggregate`.
    pub const REQUESTS_SUCCEED: MethodKey = key(
        "requests_succeed_aggregate",
        "Aggregated Succeed Requests",
        true,
    );
    /// `dubbo.%s.requests.failed.aggregate`: failures of no other reason.
    pub const REQUESTS_FAILED: MethodKey = key(
        "requests_failed_aggregate",
        "Aggregated Failed Requests",
        true,
    );
    /// `dubbo.%s.requests.business.failed.aggregate`.
    pub const REQUESTS_BUSINESS_FAILED: MethodKey = key(
        "requests_business_failed_aggregate",
        "Aggregated Business Failed Requests",
        true,
    );
    /// `dubbo.%s.requests.timeout.failed.aggregate`.
    pub const REQUESTS_TIMEOUT: MethodKey = key(
        "requests_timeout_failed_aggregate",
        "Aggregated timeout Failed Requests",
        true,
    );
    /// `dubbo.%s.requests.limit.aggregate`.
    pub const REQUESTS_LIMIT: MethodKey = key(
        "requests_limit_aggregate",
        "Aggregated limit Requests",
        true,
    );
    /// `dubbo.%s.requests.failed.total.aggregate`: every failure.
    pub const REQUESTS_TOTAL_FAILED: MethodKey = key(
        "requests_failed_total_aggregate",
        "Aggregated failed total Requests",
        true,
    );
    /// `dubbo.%s.requests.failed.network.total.aggregate`.
    pub const REQUESTS_NETWORK_FAILED: MethodKey = key(
        "requests_failed_network_total_aggregate",
        "Aggregated failed network total Requests",
        true,
    );
    /// `dubbo.%s.requests.failed.codec.total.aggregate`.
    pub const REQUESTS_CODEC_FAILED: MethodKey = key(
        "requests_failed_codec_total_aggregate",
        "Aggregated failed codec total Requests",
        true,
    );
    /// `dubbo.%s.requests.failed.service.unavailable.total.aggregate` (Java's
    /// description, a copy of the codec one, kept).
    pub const REQUESTS_SERVICE_UNAVAILABLE_FAILED: MethodKey = key(
        "requests_failed_service_unavailable_total_aggregate",
        "Aggregated failed codec total Requests",
        true,
    );

    /// The aggregated counters, in Java's export order.
    pub const COUNTERS: [MethodKey; 10] = [
        REQUESTS_TOTAL,
        REQUESTS_SUCCEED,
        REQUESTS_FAILED,
        REQUESTS_BUSINESS_FAILED,
        REQUESTS_TIMEOUT,
        REQUESTS_LIMIT,
        REQUESTS_TOTAL_FAILED,
        REQUESTS_NETWORK_FAILED,
        REQUESTS_CODEC_FAILED,
        REQUESTS_SERVICE_UNAVAILABLE_FAILED,
    ];

    /// `dubbo.%s.qps.total`: calls per second over the QPS window.
    pub const QPS: MethodKey = key("qps_total", "Query Per Seconds", true);
    /// `dubbo.%s.rt.milliseconds.p99`, and the other quantiles, in Java's order.
    pub const RT_QUANTILES: [(MethodKey, f64); 4] = [
        (key("rt_milliseconds_p99", "Response Time P99", false), 0.99),
        (key("rt_milliseconds_p95", "Response Time P95", false), 0.95),
        (key("rt_milliseconds_p90", "Response Time P90", false), 0.90),
        (key("rt_milliseconds_p50", "Response Time P50", false), 0.50),
    ];
    /// `dubbo.%s.rt.min.milliseconds.aggregate`.
    pub const RT_MIN: MethodKey = key(
        "rt_min_milliseconds_aggregate",
        "Aggregated Min Response",
        false,
    );
    /// `dubbo.%s.rt.max.milliseconds.aggregate`.
    pub const RT_MAX: MethodKey = key(
        "rt_max_milliseconds_aggregate",
        "Aggregated Max Response",
        false,
    );
    /// `dubbo.%s.rt.avg.milliseconds.aggregate`.
    pub const RT_AVG: MethodKey = key(
        "rt_avg_milliseconds_aggregate",
        "Aggregated Avg Response",
        false,
    );
}

/// `dubbo.application.info.total` (a gauge at 1): Java's `APPLICATION_METRIC_INFO`.
pub const APPLICATION_INFO: &str = "dubbo_application_info_total";
/// Its help text.
pub const APPLICATION_INFO_HELP: &str = "Total Application Info";

/// The provider thread pool gauges (Java's `MetricsKey.THREAD_POOL_*`, sampled by its
/// `ThreadPoolMetricsSampler` and `ThreadRejectMetricsCountSampler`): name and help.
/// Java exports every one of them, the reject count included, as a gauge.
pub mod thread_pool {
    /// `dubbo.thread.pool.core.size`.
    pub const CORE_SIZE: (&str, &str) = ("dubbo_thread_pool_core_size", "Thread Pool Core Size");
    /// `dubbo.thread.pool.largest.size`.
    pub const LARGEST_SIZE: (&str, &str) =
        ("dubbo_thread_pool_largest_size", "Thread Pool Largest Size");
    /// `dubbo.thread.pool.max.size`.
    pub const MAX_SIZE: (&str, &str) = ("dubbo_thread_pool_max_size", "Thread Pool Max Size");
    /// `dubbo.thread.pool.active.size`.
    pub const ACTIVE_SIZE: (&str, &str) =
        ("dubbo_thread_pool_active_size", "Thread Pool Active Size");
    /// `dubbo.thread.pool.thread.count`.
    pub const THREAD_COUNT: (&str, &str) =
        ("dubbo_thread_pool_thread_count", "Thread Pool Thread Count");
    /// `dubbo.thread.pool.queue.size`.
    pub const QUEUE_SIZE: (&str, &str) = ("dubbo_thread_pool_queue_size", "Thread Pool Queue Size");
    /// `dubbo.thread.pool.reject.thread.count`.
    pub const REJECT_THREAD_COUNT: (&str, &str) = (
        "dubbo_thread_pool_reject_thread_count",
        "Thread Pool Reject Thread Count",
    );
    /// A provider server's pool name: Java's `DubboServerHandler-<port>`
    /// (`SERVER_THREAD_POOL_NAME` and the executor repository's key, the port).
    pub fn server_pool_name(port: u16) -> String {
        format!("DubboServerHandler-{port}")
    }
}

/// Java's registry series (`RegistryMetricsCollector`, on with
/// `dubbo.metrics.enable-registry`): every one a gauge, as Java exports them.
pub mod registry {
    /// `dubbo.registry.register.requests.total`: application instance registrations.
    pub const REGISTER_REQUESTS: (&str, &str) = (
        "dubbo_registry_register_requests_total",
        "Total Register Requests",
    );
    /// `dubbo.registry.register.requests.succeed.total`.
    pub const REGISTER_REQUESTS_SUCCEED: (&str, &str) = (
        "dubbo_registry_register_requests_succeed_total",
        "Succeed Register Requests",
    );
    /// `dubbo.registry.register.requests.failed.total`.
    pub const REGISTER_REQUESTS_FAILED: (&str, &str) = (
        "dubbo_registry_register_requests_failed_total",
        "Failed Register Requests",
    );
    /// `dubbo.registry.subscribe.num.total`: subscriptions of references.
    pub const SUBSCRIBE_NUM: (&str, &str) =
        ("dubbo_registry_subscribe_num_total", "Total Subscribe Num");
    /// `dubbo.registry.subscribe.num.succeed.total`.
    pub const SUBSCRIBE_NUM_SUCCEED: (&str, &str) = (
        "dubbo_registry_subscribe_num_succeed_total",
        "Succeed Subscribe Num",
    );
    /// `dubbo.registry.subscribe.num.failed.total`.
    pub const SUBSCRIBE_NUM_FAILED: (&str, &str) = (
        "dubbo_registry_subscribe_num_failed_total",
        "Failed Subscribe Num",
    );
    /// `dubbo.registry.register.service.total`: provider URL registrations.
    pub const REGISTER_SERVICE: (&str, &str) = (
        "dubbo_registry_register_service_total",
        "Total Service-Level Register Requests",
    );
    /// `dubbo.registry.register.service.succeed.total`.
    pub const REGISTER_SERVICE_SUCCEED: (&str, &str) = (
        "dubbo_registry_register_service_succeed_total",
        "Succeed Service-Level Register Requests",
    );
    /// `dubbo.registry.register.service.failed.total`.
    pub const REGISTER_SERVICE_FAILED: (&str, &str) = (
        "dubbo_registry_register_service_failed_total",
        "Failed Service-Level Register Requests",
    );
    /// `dubbo.registry.subscribe.service.num.total`.
    pub const SUBSCRIBE_SERVICE_NUM: (&str, &str) = (
        "dubbo_registry_subscribe_service_num_total",
        "Total Service-Level Subscribe Num",
    );
    /// `dubbo.registry.subscribe.service.num.succeed.total`.
    pub const SUBSCRIBE_SERVICE_NUM_SUCCEED: (&str, &str) = (
        "dubbo_registry_subscribe_service_num_succeed_total",
        "Succeed Service-Level Num",
    );
    /// `dubbo.registry.subscribe.service.num.failed.total`.
    pub const SUBSCRIBE_SERVICE_NUM_FAILED: (&str, &str) = (
        "dubbo_registry_subscribe_service_num_failed_total",
        "Failed Service-Level Num",
    );
    /// `dubbo.registry.notify.requests.total`: provider lists received.
    pub const NOTIFY_REQUESTS: (&str, &str) = (
        "dubbo_registry_notify_requests_total",
        "Total Notify Requests",
    );
    /// `dubbo.registry.notify.num.last`: the size of a service's last provider list.
    pub const NOTIFY_NUM_LAST: (&str, &str) =
        ("dubbo_registry_notify_num_last", "Last Notify Nums");
    /// `dubbo.registry.directory.num.all`: the providers a reference's directory lists.
    pub const DIRECTORY_NUM_ALL: (&str, &str) =
        ("dubbo_registry_directory_num_all", "All Directory Urls");
    /// `dubbo.registry.directory.num.valid.total`: those available.
    pub const DIRECTORY_NUM_VALID: (&str, &str) = (
        "dubbo_registry_directory_num_valid_total",
        "Valid Directory Urls",
    );
    /// `dubbo.registry.directory.num.to_reconnect.total`.
    pub const DIRECTORY_NUM_TO_RECONNECT: (&str, &str) = (
        "dubbo_registry_directory_num_to_reconnect_total",
        "ToReconnect Directory Urls",
    );
    /// `dubbo.registry.directory.num.disable.total`: those not available.
    pub const DIRECTORY_NUM_DISABLE: (&str, &str) = (
        "dubbo_registry_directory_num_disable_total",
        "Disable Directory Urls",
    );
    /// The response time series of an operation: Java's `RtStatComposite` names them
    /// `dubbo.<op>.rt.milliseconds.{last,min,max,sum,avg}`, `<op>` one of these.
    pub const RT_OPS: [&str; 5] = [
        "register",
        "subscribe",
        "notify",
        "register_service",
        "subscribe_service",
    ];
}

/// `dubbo.configcenter.total` (a gauge, as Java exports it): changes the config
/// center delivered, by key, group, config center and change type.
pub const CONFIG_CENTER_TOTAL: (&str, &str) = ("dubbo_configcenter_total", "Config Changed Total");

/// The label names (Java's `MetricsConstants.TAG_*`, dots as underscores).
pub mod labels {
    /// `application.name`.
    pub const APPLICATION_NAME: &str = "application_name";
    /// `application.module.id`: Java's application model id (`1.1` for the first).
    pub const APPLICATION_MODULE_ID: &str = "application_module_id";
    /// `application.version`: the framework's version.
    pub const APPLICATION_VERSION: &str = "application_version";
    /// `git.commit.id`.
    pub const GIT_COMMIT_ID: &str = "git_commit_id";
    /// `hostname`.
    pub const HOSTNAME: &str = "hostname";
    /// `ip`.
    pub const IP: &str = "ip";
    /// `interface`: the service interface.
    pub const INTERFACE: &str = "interface";
    /// `method`.
    pub const METHOD: &str = "method";
    /// `group` (empty when none).
    pub const GROUP: &str = "group";
    /// `version` (empty when none).
    pub const VERSION: &str = "version";
    /// `pid`.
    pub const PID: &str = "pid";
    /// `thread.pool.name`.
    pub const THREAD_POOL_NAME: &str = "thread_pool_name";
    /// `registry.cluster`: the registry's cluster name (its `registry-cluster`
    /// parameter, else its protocol).
    pub const REGISTRY_CLUSTER: &str = "registry_cluster";
    /// `key`: a config center key.
    pub const KEY: &str = "key";
    /// `config.center`: the config center's protocol (`zookeeper`, `nacos`...).
    pub const CONFIG_CENTER: &str = "config_center";
    /// `change.type`: `added`, `modified` or `deleted`.
    pub const CHANGE_TYPE: &str = "change_type";
    /// `register_mode`: `interface` or `instance`, on the directory series.
    pub const REGISTER_MODE: &str = "register_mode";
    /// `registry`: the registry's cluster name, on the directory series.
    pub const REGISTRY: &str = "registry";
    /// `le`: a histogram bucket's upper bound.
    pub const LE: &str = "le";
}
