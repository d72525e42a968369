//! The invoker model: filter chains in their documented order, the protocol wrapper,
//! and extension tables (adaptive selection, wrappers, unknown names).
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use rubbo_common::{
    BoxFuture, BoxInvoker, ErrorKind, Exporter, ExtensionTable, Filter, FilteredProtocol,
    Invocation, InvokeFuture, Invoker, Payload, Protocol, RpcError, RpcResult, Side, Url, Value,
    build_chain, filter_fn,
};

#[derive(Debug)]
struct Recorder {
    url: Url,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Invoker for Recorder {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        let seen = self.seen.clone();
        Box::pin(async move {
            let mut keys: Vec<String> = inv.attachments().keys().cloned().collect();
            keys.sort();
            seen.lock()
                .unwrap()
                .push(format!("service:{}", keys.join(",")));
            Ok(RpcResult::value(Payload::Value(Value::from("ok"))))
        })
    }
    fn url(&self) -> &Url {
        &self.url
    }
}

#[derive(Debug)]
struct Named {
    name: &'static str,
    order: i32,
    side: Option<Side>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Filter for Named {
    fn layer(&self, next: BoxInvoker) -> BoxInvoker {
        let name = self.name;
        let seen = self.seen.clone();
        Filter::layer(
            &filter_fn(move |mut inv: Invocation, next: BoxInvoker| {
                let seen = seen.clone();
                async move {
                    seen.lock().unwrap().push(name.to_owned());
                    inv.set_attachment(name, true);
                    next.invoke(inv).await
                }
            }),
            next,
        )
    }
    fn order(&self) -> i32 {
        self.order
    }
    fn activate(&self, _url: &Url, side: Side) -> bool {
        self.side.is_none_or(|s| s == side)
    }
}

fn recorder(seen: &Arc<Mutex<Vec<String>>>) -> BoxInvoker {
    Arc::new(Recorder {
        url: Url::parse("dubbo://127.0.0.1:20880/S").unwrap(),
        seen: seen.clone(),
    })
}

#[tokio::test]
async fn filters_run_in_ascending_order_and_only_on_their_side() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let f = |name, order, side| -> Arc<dyn Filter> {
        Arc::new(Named {
            name,
            order,
            side,
            seen: seen.clone(),
        })
    };
    let filters = vec![
        f("late", 10, None),
        f("early", -10, None),
        f("provider-only", 0, Some(Side::Provider)),
        f("tie-a", 0, None),
        f("tie-b", 0, None),
    ];
    let chain = build_chain(recorder(&seen), &filters, Side::Consumer);
    chain.invoke(Invocation::new("S", "m")).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            "early",
            "tie-a",
            "tie-b",
            "late",
            "service:early,late,tie-a,tie-b"
        ]
    );
}

#[derive(Debug)]
struct FakeProtocol {
    seen: Arc<Mutex<Vec<String>>>,
}

#[derive(Debug)]
struct FakeExporter(BoxInvoker);

impl Exporter for FakeExporter {
    fn invoker(&self) -> &BoxInvoker {
        &self.0
    }
    fn unexport(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

impl Protocol for FakeProtocol {
    fn default_port(&self) -> u16 {
        1
    }
    fn export(
        &self,
        invoker: BoxInvoker,
    ) -> BoxFuture<'static, Result<Box<dyn Exporter>, RpcError>> {
        Box::pin(async move { Ok(Box::new(FakeExporter(invoker)) as Box<dyn Exporter>) })
    }
    fn refer(&self, _url: Url) -> BoxFuture<'static, Result<BoxInvoker, RpcError>> {
        let inv = recorder(&self.seen);
        Box::pin(async move { Ok(inv) })
    }
    fn destroy(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

#[tokio::test]
async fn every_protocol_handed_out_is_wrapped_with_the_filter_chain() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let filters: Arc<[Arc<dyn Filter>]> = Arc::from(vec![
        Arc::new(Named {
            name: "consumer-f",
            order: 0,
            side: Some(Side::Consumer),
            seen: seen.clone(),
        }) as Arc<dyn Filter>,
        Arc::new(Named {
            name: "provider-f",
            order: 0,
            side: Some(Side::Provider),
            seen: seen.clone(),
        }),
    ]);
    let mut protocols: ExtensionTable<dyn Protocol> = ExtensionTable::new("protocol", "dubbo");
    protocols.register("dubbo", Arc::new(FakeProtocol { seen: seen.clone() }));
    let fs = filters.clone();
    protocols.add_wrapper(move |p| Arc::new(FilteredProtocol::new(p, fs.clone())));

    let protocol = protocols
        .select(&Url::parse("dubbo://h:1/S").unwrap(), "protocol")
        .unwrap();
    let consumer = protocol
        .refer(Url::parse("dubbo://h:1/S").unwrap())
        .await
        .unwrap();
    consumer.invoke(Invocation::new("S", "m")).await.unwrap();
    let exporter = protocol.export(recorder(&seen)).await.unwrap();
    exporter
        .invoker()
        .invoke(Invocation::new("S", "m"))
        .await
        .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            "consumer-f",
            "service:consumer-f",
            "provider-f",
            "service:provider-f"
        ]
    );
}

#[test]
fn adaptive_selection_by_url_and_method_with_clear_unknown_errors() {
    let mut t: ExtensionTable<str> = ExtensionTable::new("loadbalance", "random");
    for name in ["random", "roundrobin", "leastactive"] {
        t.register(name, Arc::from(name));
    }
    let url =
        Url::parse("dubbo://h:1/S?loadbalance=roundrobin&slow.loadbalance=leastactive").unwrap();
    assert_eq!(&*t.select(&url, "loadbalance").unwrap(), "roundrobin");
    assert_eq!(
        &*t.select_for_method(&url, "slow", "loadbalance").unwrap(),
        "leastactive"
    );
    assert_eq!(
        &*t.select_for_method(&url, "fast", "loadbalance").unwrap(),
        "roundrobin"
    );
    assert_eq!(
        &*t.select(&Url::parse("dubbo://h:1/S").unwrap(), "loadbalance")
            .unwrap(),
        "random"
    );
    let err = t
        .select(
            &Url::parse("dubbo://h:1/S?loadbalance=nope").unwrap(),
            "loadbalance",
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no loadbalance extension named \"nope\" (known: leastactive, random, roundrobin)"
    );
}

#[test]
fn errors_keep_their_kind_code_and_retry_rule() {
    let e = RpcError::network("connection refused").with_source(std::io::Error::other("refused"));
    assert_eq!(e.kind(), ErrorKind::Network);
    assert_eq!(e.code(), 1);
    assert!(e.is_retryable());
    assert!(std::error::Error::source(&e).is_some());
    let b = RpcError::biz("org.rubbo.interop.InteropException", Some("boom".into()));
    assert!(!b.is_retryable());
    assert_eq!(
        b.biz_exception().unwrap().class,
        "org.rubbo.interop.InteropException"
    );
    assert_eq!(
        b.to_string(),
        "business exception error: org.rubbo.interop.InteropException: boom"
    );
    assert!(!RpcError::method_not_found("x").is_retryable());
}
