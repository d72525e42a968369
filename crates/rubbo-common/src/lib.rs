//! The Dubbo URL, invocation model, errors and extension registry shared by every
//! Rubbo layer.
//!
//! - [`Url`]: the configuration bus (`protocol://user:pass@host:port/path?k=v`), parsed
//!   and encoded exactly as Java Dubbo does; [`keys`] names its parameters and
//!   [`resolve`] implements Dubbo's precedence rules once.
//! - [`Invocation`], [`RpcResult`], [`RpcError`]: one call, its outcome, its failure.
//! - [`Invoker`], [`Filter`], [`Protocol`], [`Exporter`]: the shapes every protocol,
//!   filter and cluster speaks.
//! - [`ExtensionTable`]: named implementations of an extension point (Java's SPI).
//! - [`Serialization`]: the wire codec extension point; [`Encoded`] bytes name theirs
//!   and are decoded through it. No codec lives here (the built-ins are in
//!   `rubbo-serialization`): `rubbo_hessian2` supplies only the dynamic [`Value`] model
//!   and its serde conversions, which every serialization shares.
// Unsafe stays forbidden here, not in Cargo.toml: see the [lints] note there.
#![forbid(unsafe_code)]

mod codec;
pub mod descriptor;
mod error;
pub mod executor;
pub mod exporters;
pub mod extension;
pub mod filter;
mod invocation;
mod invoker;
pub mod keys;
mod protocol;
pub mod resolve;
mod result;
pub mod serialization;
pub mod stream;
mod unboxed;
pub mod url;

pub use error::{ErrorKind, RpcError};
pub use extension::{ExtensionError, ExtensionTable};
pub use filter::{Filter, FilterFn, FilteredProtocol, Side, filter_fn};
pub use invocation::{Arguments, Attachments, Invocation, Peer};
pub use invoker::{BoxFuture, BoxInvoker, InvokeFuture, Invoker, InvokerService, ServiceInvoker};
pub use protocol::{Exporter, Protocol};
pub use result::{
    BizException, Encoded, GENERIC_EXCEPTION_CLASS_FIELD, GENERIC_EXCEPTION_MESSAGE_FIELD, Outcome,
    Payload, RpcResult, TypedValue,
};
pub use rubbo_hessian2::Value;
pub use serialization::{Serialization, SerializationError};
pub use url::{Url, UrlError, UrlParams};

/// `d` in whole milliseconds, rounded up (a deadline of `timeout` ms set a moment ago
/// still sends `timeout`, not one less); saturates at `u64::MAX`. Whole seconds are
/// whole milliseconds, so only the sub-second part rounds, in `u64` arithmetic.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(rubbo_common::ceil_ms(Duration::from_micros(1_001)), 2);
/// assert_eq!(rubbo_common::ceil_ms(Duration::from_secs(3)), 3_000);
/// ```
pub fn ceil_ms(d: std::time::Duration) -> u64 {
    d.as_secs()
        .saturating_mul(1000)
        .saturating_add(u64::from(d.subsec_nanos().div_ceil(1_000_000)))
}

/// The `$echo` method name (Java's `$ECHO`).
pub const ECHO_METHOD: &str = "$echo";
/// The generic invocation method name (Java's `$INVOKE`).
pub const GENERIC_METHOD: &str = "$invoke";
/// The asynchronous generic invocation method name (Java's `$INVOKE_ASYNC`).
pub const GENERIC_ASYNC_METHOD: &str = "$invokeAsync";

/// The three arguments of `$invoke(String method, String[] parameterTypes, Object[]
/// args)` (Java's `GenericService`), as Java writes them: the types as a `String[]`, the
/// arguments as an `Object[]`. No types: the provider finds a method that is not
/// overloaded by its name.
///
/// ```
/// use rubbo_common::{Value, generic_arguments};
/// let args = generic_arguments("echo", &["java.lang.String"], vec![Value::from("hi")]);
/// assert_eq!(args.len(), 3);
/// ```
pub fn generic_arguments(method: &str, parameter_types: &[&str], args: Vec<Value>) -> Vec<Value> {
    use rubbo_hessian2::List;
    vec![
        Value::from(method),
        Value::List(List {
            type_name: Some("[string".into()),
            items: parameter_types.iter().map(|t| Value::from(*t)).collect(),
        }),
        Value::List(List {
            type_name: Some("[object".into()),
            items: args,
        }),
    ]
}

/// Builds a service key `{group}/{interface}:{version}`, omitting an empty group or
/// version (Java's `BaseServiceMetadata.buildServiceKey`).
///
/// ```
/// assert_eq!(rubbo_common::service_key(Some("g"), "a.B", Some("1.0")), "g/a.B:1.0");
/// assert_eq!(rubbo_common::service_key(None, "a.B", None), "a.B");
/// ```
pub fn service_key(group: Option<&str>, interface: &str, version: Option<&str>) -> String {
    let group = group.filter(|g| !g.is_empty());
    let version = version.filter(|v| !v.is_empty());
    let mut key = String::with_capacity(
        interface.len() + group.map_or(0, |g| g.len() + 1) + version.map_or(0, |v| v.len() + 1),
    );
    if let Some(g) = group {
        key.push_str(g);
        key.push('/');
    }
    key.push_str(interface);
    if let Some(v) = version {
        key.push(':');
        key.push_str(v);
    }
    key
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::ceil_ms;

    #[test]
    fn time_left_rounds_up_to_whole_milliseconds() {
        for nanos in [
            0u64,
            1,
            999_999,
            1_000_000,
            1_000_001,
            999_999_999,
            1_000_000_000,
            1_000_000_001,
            9_999_400_000,
            86_400_000_000_123,
        ] {
            let d = Duration::from_nanos(nanos);
            let want = u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap();
            assert_eq!(ceil_ms(d), want, "{nanos} ns");
        }
        assert_eq!(ceil_ms(Duration::MAX), u64::MAX);
    }
}
