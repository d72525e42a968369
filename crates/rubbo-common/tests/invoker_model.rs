//! The invoker model: filter chains in their documented order, the protocol wrapper,
//! and extension tables (adaptive selection, wrappers, unknown names).
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use rubbo_common::filter::{Activate, Stage, build_chain};
use rubbo_common::{
    BoxFuture, BoxInvoker, ErrorKind, Exporter, ExtensionTable, Filter, FilteredProtocol,
    Invocation, InvokeFuture, Invoker, Payload, Protocol, RpcError, RpcResult, Url, Value,
    filter_fn,
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
    activate: Activate,
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
    fn activate(&self) -> Activate {
        self.activate
    }
}

fn recorder(seen: &Arc<Mutex<Vec<String>>>) -> BoxInvoker {
    Arc::new(Recorder {
        url: Url::parse("dubbo://127.0.0.1:20880/S").unwrap(),
        seen: seen.clone(),
    })
}

fn table(
    seen: &Arc<Mutex<Vec<String>>>,
    filters: &[(&'static str, Activate)],
) -> ExtensionTable<dyn Filter> {
    let mut t: ExtensionTable<dyn Filter> = ExtensionTable::new("filter", "");
    for (name, activate) in filters {
        t.register(
            *name,
            Arc::new(Named {
                name,
                activate: *activate,
                seen: seen.clone(),
            }),
        );
    }
    t
}

async fn run_chain(url: &str, filters: &[(&'static str, Activate)], stage: Stage) -> Vec<String> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let t = table(&seen, filters);
    let service = Arc::new(Recorder {
        url: Url::parse(url).unwrap(),
        seen: seen.clone(),
    });
    let chain = build_chain(service, &t, stage).unwrap();
    chain.invoke(Invocation::new("S", "m")).await.unwrap();
    seen.lock().unwrap().clone()
}

#[tokio::test]
async fn filters_run_in_ascending_order_and_only_in_their_stage() {
    let filters = [
        ("late", Activate::both(10)),
        ("early", Activate::both(-10)),
        ("provider-only", Activate::provider(0)),
        ("tie-b", Activate::consumer(0)),
        ("tie-a", Activate::consumer(0)),
        ("cluster-only", Activate::cluster(0)),
        ("asked-only", Activate::on_demand()),
    ];
    let url = "dubbo://127.0.0.1:20880/S";
    assert_eq!(
        run_chain(url, &filters, Stage::Consumer).await,
        [
            "early",
            "tie-a",
            "tie-b",
            "late",
            "service:early,late,tie-a,tie-b"
        ]
    );
    assert_eq!(
        run_chain(url, &filters, Stage::Provider).await,
        [
            "early",
            "provider-only",
            "late",
            "service:early,late,provider-only"
        ]
    );
    assert_eq!(
        run_chain(url, &filters, Stage::Cluster).await,
        ["cluster-only", "service:cluster-only"]
    );
}

#[tokio::test]
async fn filter_lists_add_remove_and_place_the_activated_ones_as_java_does() {
    let filters = [
        ("a", Activate::provider(1)),
        ("b", Activate::provider(2)),
        ("keyed", Activate::provider(0).when_keys(&["needs"])),
        ("x", Activate::on_demand()),
        ("y", Activate::on_demand()),
    ];
    let p = Stage::Provider;
    let chain = |q: &'static str| format!("dubbo://h:1/S?{q}");
    let order = |v: Vec<String>| {
        v.into_iter()
            .filter(|s| !s.starts_with("service:"))
            .collect::<Vec<_>>()
    };
    assert_eq!(order(run_chain(&chain(""), &filters, p).await), ["a", "b"]);
    assert_eq!(
        order(run_chain(&chain("needs=1"), &filters, p).await),
        ["keyed", "a", "b"]
    );
    assert_eq!(
        order(run_chain(&chain("m.needs=1"), &filters, p).await),
        ["keyed", "a", "b"]
    );
    assert_eq!(
        order(run_chain(&chain("needs="), &filters, p).await),
        ["a", "b"]
    );
    assert_eq!(
        order(run_chain(&chain("service.filter=y,x"), &filters, p).await),
        ["a", "b", "y", "x"]
    );
    assert_eq!(
        order(run_chain(&chain("service.filter=y,default,x"), &filters, p).await),
        ["y", "a", "b", "x"]
    );
    assert_eq!(
        order(run_chain(&chain("service.filter=-a,x"), &filters, p).await),
        ["b", "x"]
    );
    assert_eq!(
        order(run_chain(&chain("service.filter=-default,x"), &filters, p).await),
        ["x"]
    );
    // Naming an activated filter moves it to where it is named.
    assert_eq!(
        order(run_chain(&chain("service.filter=y,a"), &filters, p).await),
        ["b", "y", "a"]
    );
    // The consumer's list does not touch a provider chain.
    assert_eq!(
        order(run_chain(&chain("reference.filter=-default"), &filters, p).await),
        ["a", "b"]
    );

    let seen = Arc::new(Mutex::new(Vec::new()));
    let t = table(&seen, &filters);
    let bad = Url::parse("dubbo://h:1/S?service.filter=a,nope").unwrap();
    let err = rubbo_common::filter::select(&t, &bad, p).err().unwrap();
    assert_eq!(
        err.to_string(),
        "no filter extension named \"nope\" (known: a, b, keyed, x, y)"
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
    let filters = Arc::new(table(
        &seen,
        &[
            ("consumer-f", Activate::consumer(0)),
            ("provider-f", Activate::provider(0)),
        ],
    ));
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
