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
}
