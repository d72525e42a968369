//! A mock invoker for filter tests (tower-test's mock with a handle): it records the
//! calls it gets, answers what the test set, and can hold a call until the test
//! releases it. Plus the chain the built-in filters build for a URL.
#![allow(dead_code, unreachable_pub)]

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rubbo_common::Filter;
use rubbo_common::filter::{Stage, build_chain};
use rubbo_common::{
    BoxInvoker, Invocation, InvokeFuture, Invoker, Payload, RpcError, RpcResult, Url, Value,
};
use tokio::sync::{oneshot, watch};

/// How long a test waits for something that should happen.
pub const WAIT: Duration = Duration::from_secs(5);

#[derive(Debug)]
struct State {
    calls: Mutex<Vec<Invocation>>,
    answer: Mutex<Result<RpcResult, RpcError>>,
    holds: Mutex<VecDeque<oneshot::Receiver<()>>>,
    count: watch::Sender<usize>,
}

/// The mock provider (or service): what the filters wrap.
#[derive(Debug)]
pub struct Mock {
    url: Url,
    state: Arc<State>,
}

/// What the test keeps to look at and steer the mock.
#[derive(Debug, Clone)]
pub struct Handle {
    state: Arc<State>,
}

/// A mock for `url`, answering `"ok"` until told otherwise.
pub fn mock(url: &str) -> (BoxInvoker, Handle) {
    let state = Arc::new(State {
        calls: Mutex::new(Vec::new()),
        answer: Mutex::new(Ok(RpcResult::value(Payload::Value(Value::from("ok"))))),
        holds: Mutex::new(VecDeque::new()),
        count: watch::channel(0).0,
    });
    let url = Url::parse(url).expect("test URL");
    (
        Arc::new(Mock {
            url,
            state: state.clone(),
        }),
        Handle { state },
    )
}

impl Invoker for Mock {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        self.state.calls.lock().push(inv);
        self.state.count.send_modify(|n| *n += 1);
        let hold = self.state.holds.lock().pop_front();
        let answer = self.state.answer.lock().clone();
        Box::pin(async move {
            if let Some(hold) = hold {
                // Released when the test sends or drops its end.
                let _ = hold.await;
            }
            answer
        })
    }

    fn url(&self) -> &Url {
        &self.url
    }
}

impl Handle {
    /// The calls received so far, in order.
    pub fn calls(&self) -> Vec<Invocation> {
        self.state.calls.lock().clone()
    }

    /// How many calls were received.
    pub fn count(&self) -> usize {
        self.state.calls.lock().len()
    }

    /// The last call received.
    pub fn last(&self) -> Invocation {
        self.calls().pop().expect("the mock got a call")
    }

    /// Answers every later call with `answer`.
    pub fn answer(&self, answer: Result<RpcResult, RpcError>) {
        *self.state.answer.lock() = answer;
    }

    /// Holds the next call not yet held until the returned sender is used (or
    /// dropped).
    pub fn hold_next(&self) -> oneshot::Sender<()> {
        let (tx, rx) = oneshot::channel();
        self.state.holds.lock().push_back(rx);
        tx
    }

    /// Waits (at most [`WAIT`]) until the mock has received `n` calls.
    pub async fn wait_for_calls(&self, n: usize) {
        let mut rx = self.state.count.subscribe();
        tokio::time::timeout(WAIT, rx.wait_for(|c| *c >= n))
            .await
            .unwrap_or_else(|_| panic!("the mock got {} calls, not {n}", self.count()))
            .expect("the mock is alive");
    }
}

/// `invoker` in the chain of `stage` that the built-in filters build for its URL.
pub fn chain(invoker: BoxInvoker, stage: Stage) -> BoxInvoker {
    build_chain(invoker, &rubbo_filter::builtin_filters(), stage).expect("known filters")
}

/// The names of the built-in filters in the chain of `stage` for `url`.
pub fn chain_names(url: &str, stage: Stage) -> Vec<String> {
    let url = Url::parse(url).expect("test URL");
    rubbo_common::filter::select(&rubbo_filter::builtin_filters(), &url, stage)
        .expect("known filters")
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

/// The string a call answered.
pub fn answered_str(result: Result<RpcResult, RpcError>) -> String {
    let payload = result.expect("the call succeeds").into_payload();
    match payload.expect("a value") {
        Payload::Value(Value::String(s)) => s,
        other => panic!("not a string: {other:?}"),
    }
}

/// An invoker standing for a service at `url`: it records every invocation and
/// answers each with a clone of its configured result (`null` unless told).
#[derive(Debug)]
pub struct MockInvoker {
    url: Url,
    calls: Mutex<Vec<Invocation>>,
    answer: Mutex<Result<RpcResult, RpcError>>,
}

impl MockInvoker {
    /// A mock for the service URL `url` (panics if it does not parse: tests only).
    pub fn new(url: &str) -> Arc<MockInvoker> {
        Arc::new(MockInvoker {
            url: Url::parse(url).expect("test URL"),
            calls: Mutex::new(Vec::new()),
            answer: Mutex::new(Ok(RpcResult::null())),
        })
    }

    /// Answers every later call with `answer`.
    pub fn answer(&self, answer: Result<RpcResult, RpcError>) {
        *self.answer.lock() = answer;
    }

    /// The invocations received so far, in order.
    pub fn calls(&self) -> Vec<Invocation> {
        self.calls.lock().clone()
    }

    /// How many invocations were received.
    pub fn call_count(&self) -> usize {
        self.calls.lock().len()
    }
}

impl Invoker for MockInvoker {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        self.calls.lock().push(inv);
        let answer = self.answer.lock().clone();
        Box::pin(std::future::ready(answer))
    }

    fn url(&self) -> &Url {
        &self.url
    }
}

/// `filter` around `mock`.
pub fn wrap(filter: &dyn Filter, mock: &Arc<MockInvoker>) -> BoxInvoker {
    filter.layer(mock.clone())
}
