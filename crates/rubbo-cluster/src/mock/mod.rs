//! Mock: degrade a service to a local answer (Java's `MockClusterInvoker` and
//! `MockInvoker`).
//!
//! The `mock` setting (method level honoured):
//!
//! - absent, empty, `false`, `0`, `null`, `N/A`: no mock;
//! - `force:...`: never call the providers, always answer with the mock;
//! - anything else (`fail:...`, or a bare body): call, and answer with the mock on an
//!   RPC failure (never on a business exception).
//!
//! The body: `return <value>` (`empty`, `null`, `true`, `false`, a quoted string, a
//! number, a JSON object or array, else the raw text), bare `return` (= `null`),
//! `throw` (a generic RPC error) or `throw <ExceptionClass>` (a business exception of
//! that class); `true` / `default` / `fail` / `force` call the implementation
//! registered for the interface in the [`MockRegistry`]; any other text names a
//! registered implementation. Backticks in return and throw bodies become double
//! quotes. `mock://` providers in the directory take precedence over the built-in
//! mock.

mod value;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use parking_lot::RwLock;
use rubbo_common::keys::MOCK_KEY;
use rubbo_common::{
    BoxInvoker, ErrorKind, Invocation, InvokeFuture, Invoker, RpcError, RpcResult, Url,
};
use tracing::{info, warn};

use crate::Directory;
use crate::router::NEED_MOCK_ATTACHMENT;
pub use value::{normalize_mock, parse_mock_value};

/// User mock implementations: Java's `{Interface}Mock` classes, registered by name.
///
/// ```
/// use rubbo_cluster::MockRegistry;
/// # use rubbo_common::*; use std::sync::Arc;
/// # #[derive(Debug)] struct GreeterMock(Url);
/// # impl Invoker for GreeterMock {
/// #     fn invoke(&self, _: Invocation) -> InvokeFuture { Box::pin(async { Ok(RpcResult::value(Payload::Value(Value::from("mocked")))) }) }
/// #     fn url(&self) -> &Url { &self.0 }
/// # }
/// let mocks = MockRegistry::default();
/// // Used by `mock=true` / `mock=default` / `mock=fail` / `mock=force` on org.demo.Greeter:
/// mocks.register_default("org.demo.Greeter", Arc::new(GreeterMock(Url::new("mock", "127.0.0.1", 0))));
/// assert!(mocks.get("org.demo.GreeterMock").is_some());
/// ```
#[derive(Default)]
pub struct MockRegistry {
    by_name: RwLock<HashMap<String, BoxInvoker>>,
}

impl fmt::Debug for MockRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.by_name.read().keys()).finish()
    }
}

impl MockRegistry {
    /// Registers `invoker` under `name` (a mock class name used as `mock=<name>`).
    pub fn register(&self, name: impl Into<String>, invoker: BoxInvoker) {
        self.by_name.write().insert(name.into(), invoker);
    }

    /// Registers the default mock of `interface` (Java's `{interface}Mock`).
    pub fn register_default(&self, interface: &str, invoker: BoxInvoker) {
        self.register(format!("{interface}Mock"), invoker);
    }

    /// The implementation registered under `name`.
    pub fn get(&self, name: &str) -> Option<BoxInvoker> {
        self.by_name.read().get(name).cloned()
    }
}

/// Java's `ConfigUtils.isEmpty`.
fn is_off(v: &str) -> bool {
    v.is_empty()
        || ["false", "0", "null", "N/A"]
            .iter()
            .any(|o| v.eq_ignore_ascii_case(o))
}

/// Wraps a cluster invoker with the `mock` behaviour.
pub struct MockClusterInvoker {
    directory: Arc<dyn Directory>,
    inner: BoxInvoker,
    mocks: Arc<MockRegistry>,
    /// `mock` is off for every method (no method-level settings and none, or an
    /// off value, for the interface): calls go straight through, unread.
    off: bool,
}

impl fmt::Debug for MockClusterInvoker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockClusterInvoker")
            .field("inner", &self.inner)
            .finish()
    }
}

impl MockClusterInvoker {
    /// Wraps `inner` (the cluster invoker over `directory`).
    pub fn new(directory: Arc<dyn Directory>, inner: BoxInvoker, mocks: Arc<MockRegistry>) -> Self {
        let url = directory.url();
        let off = !url.has_method_params() && is_off(url.get_param(MOCK_KEY).unwrap_or("").trim());
        MockClusterInvoker {
            directory,
            inner,
            mocks,
            off,
        }
    }
}

struct MockCtx {
    directory: Arc<dyn Directory>,
    mocks: Arc<MockRegistry>,
}

impl MockCtx {
    async fn do_mock(
        &self,
        inv: Invocation,
        cause: Option<RpcError>,
    ) -> Result<RpcResult, RpcError> {
        let mut flagged = inv.clone();
        flagged.set_attachment(NEED_MOCK_ATTACHMENT, "true");
        let mock_providers = self.directory.list(&flagged);
        let result = match mock_providers.first() {
            Some(p) => p.invoke(inv).await,
            None => self.builtin(inv).await,
        };
        result.map_err(|e| {
            if e.is_biz() {
                e
            } else {
                let msg = match &cause {
                    Some(c) => format!(
                        "mock failed: {}, invoke error is: {}",
                        e.message(),
                        c.message()
                    ),
                    None => format!("mock failed: {}", e.message()),
                };
                RpcError::new(e.kind(), msg).with_source(e)
            }
        })
    }

    /// Java's `MockInvoker.invoke`.
    async fn builtin(&self, inv: Invocation) -> Result<RpcResult, RpcError> {
        let url = self.directory.url();
        let raw = url
            .get_method_param(inv.method(), MOCK_KEY)
            .unwrap_or("")
            .to_owned();
        if raw.trim().is_empty() {
            return Err(RpcError::new(
                ErrorKind::Unknown,
                format!("mock can not be null. url: {url}"),
            ));
        }
        let decoded = rubbo_common::url::decode(&raw).unwrap_or(raw);
        let mock = normalize_mock(&decoded);
        if let Some(body) = mock.strip_prefix("return ") {
            return Ok(RpcResult::value(parse_mock_value(body.trim())));
        }
        if let Some(class) = mock.strip_prefix("throw") {
            let class = class.trim();
            return Err(if class.is_empty() {
                RpcError::new(
                    ErrorKind::Unknown,
                    "mocked exception for service degradation.",
                )
            } else {
                RpcError::biz(class, None)
            });
        }
        let name = if mock == "default" {
            format!("{}Mock", inv.interface())
        } else {
            mock
        };
        match self.mocks.get(&name) {
            Some(m) => m.invoke(inv).await,
            None => Err(RpcError::new(
                ErrorKind::Unknown,
                format!("Failed to create mock implementation class {name}: none registered"),
            )),
        }
    }
}

impl Invoker for MockClusterInvoker {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        if self.off {
            return self.inner.invoke(inv);
        }
        let setting = self
            .directory
            .url()
            .get_method_param(inv.method(), MOCK_KEY)
            .unwrap_or("false")
            .trim();
        if is_off(setting) {
            return self.inner.invoke(inv);
        }
        let ctx = MockCtx {
            directory: self.directory.clone(),
            mocks: self.mocks.clone(),
        };
        if setting.starts_with("force") {
            info!(method = inv.method(), mock = %setting, "force-mock enabled");
            return Box::pin(async move { ctx.do_mock(inv, None).await });
        }
        let call = self.inner.invoke(inv.clone());
        Box::pin(async move {
            match call.await {
                Ok(r) => Ok(r),
                Err(e) if e.is_biz() => Err(e),
                Err(e) => {
                    warn!(method = inv.method(), error = %e, "fail-mock: call failed, mocking");
                    ctx.do_mock(inv, Some(e)).await
                }
            }
        })
    }

    fn url(&self) -> &Url {
        self.inner.url()
    }

    fn is_available(&self) -> bool {
        self.inner.is_available()
    }

    fn destroy(&self) {
        self.inner.destroy()
    }
}
