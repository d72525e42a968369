//! Test support: a mock invoker that records the calls it gets and answers a
//! configured result, for testing filters without sockets.

#![allow(dead_code)]

use std::sync::Arc;

use parking_lot::Mutex;
use rubbo_common::{
    BoxInvoker, Filter, Invocation, InvokeFuture, Invoker, RpcError, RpcResult, Url,
};

/// An invoker standing for a service at `url`: it records every invocation and
/// answers each with a clone of its configured result (`null` unless told).
#[derive(Debug)]
pub(crate) struct MockInvoker {
    url: Url,
    calls: Mutex<Vec<Invocation>>,
    answer: Mutex<Result<RpcResult, RpcError>>,
}

impl MockInvoker {
    /// A mock for the service URL `url` (panics if it does not parse: tests only).
    pub(crate) fn new(url: &str) -> Arc<MockInvoker> {
        Arc::new(MockInvoker {
            url: Url::parse(url).expect("test URL"),
            calls: Mutex::new(Vec::new()),
            answer: Mutex::new(Ok(RpcResult::null())),
        })
    }

    /// Answers every later call with `answer`.
    pub(crate) fn answer(&self, answer: Result<RpcResult, RpcError>) {
        *self.answer.lock() = answer;
    }

    /// The invocations received so far, in order.
    pub(crate) fn calls(&self) -> Vec<Invocation> {
        self.calls.lock().clone()
    }

    /// How many invocations were received.
    pub(crate) fn call_count(&self) -> usize {
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
pub(crate) fn wrap(filter: &dyn Filter, mock: &Arc<MockInvoker>) -> BoxInvoker {
    filter.layer(mock.clone())
}
