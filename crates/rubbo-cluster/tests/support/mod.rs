//! Scripted test invokers shared by the black-box tests.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_common::{
    BizException, BoxInvoker, ErrorKind, Invocation, InvokeFuture, Invoker, Payload, RpcError,
    RpcResult, Url, Value,
};

/// What one call does.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Returns the provider's address as a string.
    Ok,
    /// Fails with this kind.
    Err(ErrorKind),
    /// Returns a business exception in the result.
    Biz,
    /// Waits, then does the inner reply.
    After(Duration, Box<Reply>),
    /// Never completes.
    Never,
}

type Script = Arc<dyn Fn(usize, &Invocation) -> Reply + Send + Sync>;

pub struct TestInvoker {
    url: Url,
    script: Script,
    pub calls: AtomicUsize,
    pub available: AtomicBool,
    pub destroyed: AtomicBool,
    pub seen: Mutex<Vec<Invocation>>,
}

impl std::fmt::Debug for TestInvoker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TestInvoker({})", self.url.address())
    }
}

impl TestInvoker {
    pub fn new(
        url: &str,
        script: impl Fn(usize, &Invocation) -> Reply + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(TestInvoker {
            url: Url::parse(url).unwrap(),
            script: Arc::new(script),
            calls: AtomicUsize::new(0),
            available: AtomicBool::new(true),
            destroyed: AtomicBool::new(false),
            seen: Mutex::new(Vec::new()),
        })
    }

    pub fn ok(url: &str) -> Arc<Self> {
        Self::new(url, |_, _| Reply::Ok)
    }

    pub fn failing(url: &str, kind: ErrorKind) -> Arc<Self> {
        Self::new(url, move |_, _| Reply::Err(kind))
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    pub fn boxed(self: &Arc<Self>) -> BoxInvoker {
        self.clone()
    }
}

fn run(reply: Reply, addr: String) -> InvokeFuture {
    Box::pin(async move {
        match reply {
            Reply::Ok => Ok(RpcResult::value(Payload::Value(Value::String(addr)))),
            Reply::Err(kind) => Err(RpcError::new(kind, format!("scripted failure at {addr}"))),
            Reply::Biz => Ok(RpcResult::from_exception(BizException::new(
                "org.rubbo.BizException",
                Some(addr),
            ))),
            Reply::After(d, inner) => {
                tokio::time::sleep(d).await;
                run(*inner, addr).await
            }
            Reply::Never => futures::future::pending().await,
        }
    })
}

impl Invoker for TestInvoker {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let reply = (self.script)(n, &inv);
        self.seen.lock().push(inv);
        run(reply, self.url.address())
    }

    fn url(&self) -> &Url {
        &self.url
    }

    fn is_available(&self) -> bool {
        self.available.load(Ordering::SeqCst) && !self.destroyed.load(Ordering::SeqCst)
    }

    fn destroy(&self) {
        self.destroyed.store(true, Ordering::SeqCst);
    }
}

/// The address string a `Reply::Ok` returns.
pub fn answered_by(r: &RpcResult) -> String {
    match r.payload() {
        Some(Payload::Value(Value::String(s))) => s.clone(),
        other => panic!("unexpected payload {other:?}"),
    }
}

pub fn inv(method: &str) -> Invocation {
    Invocation::new("org.demo.Greeter", method)
}

/// Providers `dubbo://10.0.0.{i}:20880/org.demo.Greeter?{params}`.
pub fn provider_url(i: usize, params: &str) -> String {
    let q = if params.is_empty() {
        String::new()
    } else {
        format!("?{params}")
    };
    format!("dubbo://10.0.0.{i}:20880/org.demo.Greeter{q}")
}

/// Runs a future with a bound.
pub async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("test step timed out")
}
