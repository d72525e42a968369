use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use parking_lot::Mutex;

use super::*;
use crate::host::{
    ConfigSection, ConsumerRegistry, ConsumerService, LocalService, MethodCount, MethodSignature,
    ProviderService, Registration, RegistryScope, RouterState, ServerInfo,
};

#[derive(Debug)]
struct Fake {
    providers: Mutex<Vec<ProviderService>>,
    calls: Mutex<Vec<(Vec<String>, RegistryScope, bool)>>,
    deployed: AtomicBool,
    shut: AtomicBool,
    metrics: Mutex<Option<String>>,
    recording: Mutex<Vec<String>>,
}

fn reg(registry: &str, app: bool, registered: bool) -> Registration {
    Registration {
        registry: registry.into(),
        application_level: app,
        registered,
    }
}

impl Fake {
    fn new() -> Arc<Fake> {
        Arc::new(Fake {
            providers: Mutex::new(vec![
                ProviderService::new(
                    "org.example.Greeter",
                    None,
                    Some("1.0.0"),
                    vec![reg("zookeeper", false, true), reg("zookeeper", true, true)],
                ),
                ProviderService::new(
                    "org.example.Users",
                    Some("g1"),
                    None,
                    vec![reg("memory", false, true)],
                ),
            ]),
            calls: Mutex::new(Vec::new()),
            deployed: AtomicBool::new(true),
            shut: AtomicBool::new(false),
            metrics: Mutex::new(None),
            recording: Mutex::new(Vec::new()),
        })
    }
}

impl QosHost for Fake {
    fn application(&self) -> String {
        "demo".into()
    }
    fn providers(&self) -> Vec<ProviderService> {
        self.providers.lock().clone()
    }
    fn consumers(&self) -> Vec<ConsumerService> {
        vec![ConsumerService {
            service_key: "org.example.Remote:2.0".into(),
            registries: vec![ConsumerRegistry {
                registry_url:
                    "zookeeper://127.0.0.1:2181/org.apache.dubbo.registry.RegistryService".into(),
                registry: "zookeeper".into(),
                application_level: false,
                all: vec!["dubbo://10.0.0.1:20880/org.example.Remote".into(); 2],
                valid: vec!["dubbo://10.0.0.1:20880/org.example.Remote".into()],
                disabled: vec![],
            }],
        }]
    }
    fn set_registered<'a>(
        &'a self,
        keys: &'a [String],
        scope: RegistryScope,
        registered: bool,
    ) -> BoxFuture<'a, Result<(), QosError>> {
        Box::pin(async move {
            self.calls.lock().push((keys.to_vec(), scope, registered));
            for p in self.providers.lock().iter_mut() {
                if keys.contains(&p.service_key) {
                    for r in &mut p.registrations {
                        if scope.includes(r.application_level) {
                            r.registered = registered;
                        }
                    }
                }
            }
            Ok(())
        })
    }
    fn servers(&self) -> Vec<ServerInfo> {
        vec![ServerInfo {
            protocol: "dubbo".into(),
            address: "127.0.0.1:20880".into(),
            port: 20880,
        }]
    }
    fn connections(&self, _: u16) -> Option<Vec<(String, String)>> {
        Some(vec![("127.0.0.1:5000".into(), "127.0.0.1:20880".into())])
    }
    fn started(&self) -> bool {
        true
    }
    fn deployed(&self) -> bool {
        self.deployed.load(Ordering::SeqCst)
    }
    fn config(&self) -> Vec<ConfigSection> {
        vec![
            ConfigSection {
                kind: "ApplicationConfig".into(),
                id: None,
                attributes: BTreeMap::from([("name".into(), "demo".into())]),
            },
            ConfigSection {
                kind: "ProtocolConfig".into(),
                id: Some("dubbo".into()),
                attributes: BTreeMap::from([("port".into(), "20880".into())]),
            },
        ]
    }
    fn version(&self) -> String {
        "0.1.0".into()
    }
    fn metrics(&self) -> Option<String> {
        self.metrics.lock().clone()
    }
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async { self.shut.store(true, Ordering::SeqCst) })
    }
    fn local_services(&self) -> Vec<LocalService> {
        let sig = |name: &str, types: &[&str]| MethodSignature {
            name: name.into(),
            parameter_types: types.iter().map(|t| (*t).to_owned()).collect(),
        };
        vec![LocalService {
            service_key: "org.example.Greeter:1.0.0".into(),
            interface: "org.example.Greeter".into(),
            methods: vec![
                sig("hello", &["java.lang.String"]),
                sig("add", &["int", "int"]),
                sig("add", &["double", "double"]),
                sig("show", &["java.lang.String"]),
                sig("show", &["org.example.Color"]),
                sig("fail", &[]),
            ],
        }]
    }
    fn method_count(&self, key: &str, method: &str) -> Option<MethodCount> {
        assert_eq!(key, "org.example.Greeter:1.0.0");
        self.metrics.lock().as_ref()?;
        Some(match method {
            "hello" => MethodCount {
                total: 7,
                succeeded: 5,
                failed: 2,
                active: 1,
                average_ms: 3,
                max_ms: 12,
            },
            _ => MethodCount::default(),
        })
    }
    fn invoke<'a>(
        &'a self,
        key: &'a str,
        method: &'a str,
        types: &'a [String],
        args: Vec<serde_json::Value>,
    ) -> BoxFuture<'a, Result<serde_json::Value, QosError>> {
        Box::pin(async move {
            if method == "fail" {
                return Err(QosError::command("java.lang.IllegalStateException: no"));
            }
            Ok(serde_json::json!({ "key": key, "method": method, "types": types, "args": args }))
        })
    }
    fn router_states(&self) -> Vec<RouterState> {
        vec![RouterState {
            service_key: "org.example.Remote:2.0".into(),
            all: 2,
            valid: 1,
            routers: vec!["mock".into(), "tag".into()],
            recording: self
                .recording
                .lock()
                .contains(&"org.example.Remote:2.0".to_owned()),
        }]
    }
    fn set_router_recording(&self, keys: &[String], enabled: bool) {
        let mut r = self.recording.lock();
        r.retain(|k| !keys.contains(k));
        if enabled {
            r.extend(keys.iter().cloned());
        }
    }
    fn recent_routings(&self) -> Vec<String> {
        if self.recording.lock().is_empty() {
            Vec::new()
        } else {
            vec![
                "[2026-01-02 00:00:00.000] b".into(),
                "[2026-01-01 00:00:00.000] a".into(),
            ]
        }
    }
}

/// Java's rendering: middle-aligned columns as wide as their widest cell, the odd
/// space on the left, rows sorted by service key.
const LS: &str = "As Provider side:\n\
+-------------------------+-----------------------------+\n\
|  Provider Service Name  |             PUB             |\n\
+-------------------------+-----------------------------+\n\
|   g1/org.example.Users  |         memory-I(Y)         |\n\
+-------------------------+-----------------------------+\n\
|org.example.Greeter:1.0.0|zookeeper-I(Y)/zookeeper-A(Y)|\n\
+-------------------------+-----------------------------+\n\
As Consumer side:\n\
+----------------------+--------------+\n\
| Consumer Service Name|      NUM     |\n\
+----------------------+--------------+\n\
|org.example.Remote:2.0|zookeeper-I(2)|\n\
+----------------------+--------------+\n";

fn local() -> CommandContext {
    CommandContext {
        http: false,
        peer: Some(IpAddr::from([127, 0, 0, 1])),
    }
}

fn foreign() -> CommandContext {
    CommandContext {
        http: true,
        peer: Some(IpAddr::from([203, 0, 113, 9])),
    }
}

async fn run(qos: &Qos, line: &[&str], ctx: CommandContext) -> Outcome {
    let args: Vec<String> = line[1..].iter().map(|s| (*s).to_owned()).collect();
    qos.execute(line[0], &args, ctx).await
}

async fn body(qos: &Qos, line: &[&str]) -> String {
    match run(qos, line, local()).await {
        Outcome::Done(r) => r.body,
        other => panic!("{line:?}: {other:?}"),
    }
}

fn qos(fake: &Arc<Fake>) -> Qos {
    Qos::new(fake.clone(), QosConfig::default())
}

#[tokio::test]
async fn ls_prints_javas_tables_sorted_with_registry_state() {
    let fake = Fake::new();
    let q = qos(&fake);
    let out = body(&q, &["ls"]).await;
    assert_eq!(out, LS);
}

#[tokio::test]
async fn offline_and_online_act_on_matching_services_and_answer_ok() {
    let fake = Fake::new();
    let q = qos(&fake);
    // A pattern matches the whole key, with or without the group.
    assert_eq!(body(&q, &["offline", "org.example.Users"]).await, "OK");
    assert_eq!(
        body(&q, &["offline", "org.example"]).await,
        "service not found"
    );
    assert_eq!(
        body(&q, &["offline", "nothing.*"]).await,
        "service not found"
    );
    assert!(body(&q, &["ls"]).await.contains("memory-I(N)"));
    assert_eq!(body(&q, &["online", "g1/org.*"]).await, "OK");
    assert!(body(&q, &["ls"]).await.contains("memory-I(Y)"));

    // offlineApp leaves interface-level registrations alone.
    assert_eq!(body(&q, &["offlineApp", ".*Greeter.*"]).await, "OK");
    assert!(
        body(&q, &["ls"])
            .await
            .contains("zookeeper-I(Y)/zookeeper-A(N)")
    );
    assert_eq!(body(&q, &["offlineInterface"]).await, "OK");
    assert_eq!(body(&q, &["onlineApp"]).await, "OK");
    let ls = body(&q, &["ls"]).await;
    assert!(ls.contains("zookeeper-I(N)/zookeeper-A(Y)"), "{ls}");
    assert!(ls.contains("memory-I(N)"), "{ls}");
    assert_eq!(body(&q, &["onlineInterface"]).await, "OK");

    let calls = fake.calls.lock().clone();
    assert_eq!(
        calls[0],
        (
            vec!["g1/org.example.Users".into()],
            RegistryScope::All,
            false
        )
    );
    assert_eq!(calls[2].1, RegistryScope::Application);
    assert_eq!(calls.len(), 6);

    // A bad pattern fails the command (Java: PatternSyntaxException).
    assert!(matches!(
        run(&q, &["offline", "("], local()).await,
        Outcome::Failed(_)
    ));
}

#[tokio::test]
async fn ready_is_503_until_deployed_and_while_every_service_is_offline() {
    let fake = Fake::new();
    let q = qos(&fake);
    let ready = |q: Qos| async move {
        match q.execute("ready", &[], foreign()).await {
            Outcome::Done(r) => (r.status, r.body),
            o => panic!("{o:?}"),
        }
    };
    assert_eq!(ready(q.clone()).await, (200, "true".into()));
    fake.deployed.store(false, Ordering::SeqCst);
    assert_eq!(ready(q.clone()).await, (503, "false".into()));
    fake.deployed.store(true, Ordering::SeqCst);
    body(&q, &["offline", ".*Greeter.*"]).await;
    // One service still online: ready.
    assert_eq!(ready(q.clone()).await, (200, "true".into()));
    body(&q, &["offline"]).await;
    assert_eq!(ready(q.clone()).await, (503, "false".into()));
    body(&q, &["online"]).await;
    assert_eq!(ready(q.clone()).await, (200, "true".into()));
    // Live and startup are public too.
    for p in ["live", "startup"] {
        assert_eq!(
            q.execute(p, &[], foreign()).await,
            Outcome::Done(Reply {
                status: 200,
                body: "true".into()
            })
        );
    }
}

#[tokio::test]
async fn permission_levels_as_java() {
    let fake = Fake::new();
    let q = qos(&fake);
    // Foreign anonymous peers: PUBLIC only.
    for c in ["ready", "live", "startup", "quit"] {
        assert!(
            matches!(q.execute(c, &[], foreign()).await, Outcome::Done(_)),
            "{c}"
        );
    }
    for c in [
        "ls",
        "online",
        "offline",
        "help",
        "version",
        "ps",
        "getConfig",
        "getAddress",
        "gracefulShutdown",
        "shutdown",
    ] {
        assert_eq!(
            q.execute(c, &[], foreign()).await,
            Outcome::Forbidden,
            "{c}"
        );
    }
    assert_eq!(fake.calls.lock().len(), 0, "a refused offline must not run");
    assert!(!fake.shut.load(Ordering::SeqCst));

    // Whitelisted: PROTECTED, not PRIVATE.
    let url = rubbo_common::Url::new("qos", "", 0).with_param(
        rubbo_common::keys::ACCEPT_FOREIGN_IP_WHITELIST_KEY,
        "203.0.113.0/24",
    );
    let q = Qos::new(fake.clone(), QosConfig::from_url(&url));
    assert!(matches!(
        q.execute("ls", &[], foreign()).await,
        Outcome::Done(_)
    ));
    assert_eq!(
        q.execute("getConfig", &[], foreign()).await,
        Outcome::Forbidden
    );
    // Loopback: everything.
    assert!(matches!(
        q.execute("getConfig", &[], local()).await,
        Outcome::Done(_)
    ));
    assert_eq!(q.execute("nope", &[], local()).await, Outcome::NotFound);
}

#[tokio::test]
async fn help_version_ps_and_quit() {
    let fake = Fake::new();
    let q = qos(&fake);
    let help = body(&q, &["help"]).await;
    for c in COMMANDS {
        assert!(
            help.contains(&format!(" {} | {}", c.name, c.summary)),
            "{}",
            c.name
        );
    }
    let online = body(&q, &["help", "online"]).await;
    assert!(online.contains("| COMMAND NAME | online"), "{online}");
    assert!(online.contains("| online xx.xx.xxx.service"), "{online}");
    assert_eq!(body(&q, &["help", "nope"]).await, "no such command:nope");
    assert_eq!(body(&q, &["version"]).await, "dubbo version \"0.1.0\"");
    assert_eq!(body(&q, &["ps"]).await, "20880");
    assert_eq!(body(&q, &["ps", "-l"]).await, "dubbo://127.0.0.1:20880");
    assert_eq!(
        body(&q, &["ps", "-l", "20880"]).await,
        "127.0.0.1:5000 -> 127.0.0.1:20880"
    );
    assert_eq!(body(&q, &["ps", "1"]).await, "No such port 1");
    assert_eq!(
        body(&q, &["ps", "x"]).await,
        "Illegal port x, must be integer."
    );
    assert_eq!(body(&q, &["quit"]).await, CLOSE);
}

#[tokio::test]
async fn get_config_and_get_address_text_and_json() {
    let fake = Fake::new();
    let q = qos(&fake);
    let all = body(&q, &["getConfig"]).await;
    assert_eq!(
        all,
        "ApplicationModel: demo\n\
         ApplicationConfig: (empty)\n<dubbo:application name=\"demo\" />\n\n\
         ProtocolConfig: dubbo\n<dubbo:protocol port=\"20880\" />\n\n"
    );
    let one = body(&q, &["getConfig", "ProtocolConfig", "dubbo"]).await;
    assert!(one.contains("ProtocolConfig: dubbo") && !one.contains("ApplicationConfig"));
    let http = CommandContext {
        http: true,
        ..local()
    };
    let Outcome::Done(json) = q.execute("getConfig", &[], http).await else {
        panic!()
    };
    let v: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    assert_eq!(v["demo"]["ProtocolConfig"]["dubbo"]["port"], "20880");
    assert_eq!(v["demo"]["ApplicationConfig"]["name"], "demo");

    assert_eq!(
        body(&q, &["getAddress"]).await,
        "Invalid parameters, please input like getAddress com.example.DemoService"
    );
    let text = body(&q, &["getAddress", "org.example.Remote:2.0"]).await;
    assert!(
        text.starts_with("ConsumerModel: org.example.Remote:2.0@0\n\nRegistry: zookeeper://"),
        "{text}"
    );
    assert!(
        text.contains("MigrationStep: FORCE_INTERFACE\n\nInterface-Level: \nAll Invokers: \n"),
        "{text}"
    );
    let Outcome::Done(json) = q
        .execute("getAddress", &["org.example.Remote:2.0".into()], http)
        .await
    else {
        panic!()
    };
    let v: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    let reg = &v["org.example.Remote:2.0@0"]["zookeeper://127.0.0.1:2181/org.apache.dubbo.registry.RegistryService"];
    assert_eq!(
        reg["Invokers"]["Interface-Level"]["Valid"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn shutdown_validates_and_shuts_down_graceful_shutdown_goes_offline() {
    let fake = Fake::new();
    let q = qos(&fake);
    assert_eq!(
        body(&q, &["shutdown", "-x"]).await,
        "Invalid parameter,please input like shutdown -t 10000"
    );
    assert!(!fake.shut.load(Ordering::SeqCst));
    assert_eq!(body(&q, &["gracefulShutdown"]).await, "OK");
    assert!(body(&q, &["ls"]).await.contains("memory-I(N)"));
    let out = body(&q, &["shutdown", "-t", "1"]).await;
    assert!(
        out.starts_with("Application has shutdown successfully\r\nelapsed: "),
        "{out}"
    );
    assert!(fake.shut.load(Ordering::SeqCst));
}

#[tokio::test]
async fn metrics_answers_the_prometheus_text_only_with_metrics_on() {
    let fake = Fake::new();
    let q = qos(&fake);
    assert_eq!(q.execute("metrics", &[], local()).await, Outcome::NotFound);
    let text = "dubbo_provider_requests_total{method=\"a\"} 3\n# EOF\n";
    *fake.metrics.lock() = Some(text.to_owned());
    assert_eq!(body(&q, &["metrics"]).await, text);
    assert_eq!(body(&q, &["metrics", "demo"]).await, text);
    assert_eq!(
        body(&q, &["metrics", "other"]).await,
        "Not exist application: other"
    );
    let all: serde_json::Value =
        serde_json::from_str(&body(&q, &["metrics", "application_all"]).await).unwrap();
    assert_eq!(all["demo"], text);
    // PROTECTED, as Java's `@Cmd` default: not for anonymous foreign peers.
    assert_eq!(
        q.execute("metrics", &[], foreign()).await,
        Outcome::Forbidden
    );
}

#[tokio::test]
async fn count_prints_javas_table_from_the_metrics() {
    let fake = Fake::new();
    let q = qos(&fake);
    assert!(
        body(&q, &["count"])
            .await
            .starts_with("Please input service name")
    );
    assert_eq!(body(&q, &["count", "Nope"]).await, "No such service Nope");
    assert!(
        body(&q, &["count", "Greeter", "hello"])
            .await
            .starts_with("No call statistics are kept")
    );
    *fake.metrics.lock() = Some(String::new());
    assert_eq!(
        body(&q, &["count", "Greeter", "hello"]).await,
        "+--------+-------+--------+--------+---------+------+\r\n\
         | method | total | failed | active | average | max  |\r\n\
         +--------+-------+--------+--------+---------+------+\r\n\
         | hello  | 7     | 2      | 1      | 3ms     | 12ms |\r\n\
         +--------+-------+--------+--------+---------+------+\r\n"
    );
    // Every method once, by the interface name; a number is the times.
    let all = body(&q, &["count", "org.example.Greeter", "1"]).await;
    assert_eq!(all.matches("| add ").count(), 1, "{all}");
    assert!(all.contains("| fail "), "{all}");
    assert_eq!(
        body(&q, &["count", "Greeter", "nope"]).await,
        "No such method nope in class org.example.Greeter"
    );
    assert_eq!(
        body(&q, &["count", "Greeter", "hello", "x"]).await,
        "Illegal times x, must be integer."
    );
}

#[tokio::test]
async fn invoke_picks_the_method_by_name_count_and_json_kinds() {
    let fake = Fake::new();
    let q = qos(&fake);
    let out = body(&q, &["invoke", "Greeter.hello(\"a", "b\")"]).await;
    let (head, rest) = out.split_once("\r\nresult: ").unwrap();
    assert_eq!(head, "Use default service Greeter.");
    let (json, elapsed) = rest.split_once("\r\nelapsed: ").unwrap();
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(v["key"], "org.example.Greeter:1.0.0");
    assert_eq!(v["args"], serde_json::json!(["a b"]));
    assert!(elapsed.ends_with(" ms."), "{elapsed}");

    // Overloads: the JSON kinds choose.
    // Integers fit both overloads: listed for `select`.
    let out = body(&q, &["invoke", "org.example.Greeter.add(1,2)"]).await;
    assert!(
        out.starts_with("Methods:\r\n1. add(int,int)\r\n2. add(double,double)"),
        "{out}"
    );
    let out = body(&q, &["invoke", "Greeter.add(1.5,2)"]).await;
    assert!(out.contains("\"types\":[\"double\",\"double\"]"), "{out}");

    assert_eq!(
        body(&q, &["invoke", "Nope.hello(1)"]).await,
        "Use default service Nope.\r\nNo such service Nope"
    );
    assert_eq!(
        body(&q, &["invoke", "Greeter.nope()"]).await,
        "Use default service Greeter.\r\nNo such method nope in service Greeter"
    );
    assert!(
        body(&q, &["invoke", "Greeter.hello([)"])
            .await
            .starts_with("Invalid json argument, cause: ")
    );
    assert_eq!(
        body(&q, &["invoke", "Greeter.hello"]).await,
        "Invalid parameters, format: service.method(args)"
    );
    assert_eq!(
        body(&q, &["invoke", "Greeter.fail()"]).await,
        "Failed to invoke method fail, cause: java.lang.IllegalStateException: no"
    );
}

#[tokio::test]
async fn select_follows_an_ambiguous_invoke_in_the_same_session() {
    let fake = Fake::new();
    let q = qos(&fake);
    let session = Session::default();
    let args = |s: &[&str]| s.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    let say = |o: Outcome| match o {
        Outcome::Done(r) => r.body,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        say(q
            .execute_in("select", &args(&["1"]), local(), Some(&session))
            .await),
        "Please use the invoke command first."
    );
    let listed = say(q
        .execute_in(
            "invoke",
            &args(&["Greeter.show(\"RED\")"]),
            local(),
            Some(&session),
        )
        .await);
    assert_eq!(
        listed,
        "Methods:\r\n1. show(String)\r\n2. show(Color)\r\nPlease use the select command to \
         select the method you want to invoke. eg: select 1"
    );
    assert_eq!(
        say(q
            .execute_in("select", &args(&["3"]), local(), Some(&session))
            .await),
        "Illegal index ,please input select 1~2"
    );
    let out = say(q
        .execute_in("select", &args(&["2"]), local(), Some(&session))
        .await);
    assert!(out.contains("\"types\":[\"org.example.Color\"]"), "{out}");
    assert!(out.contains("\"args\":[\"RED\"]"), "{out}");
    // Outside a session (HTTP) there is nothing to select.
    assert_eq!(
        body(&q, &["select", "1"]).await,
        "Please use the invoke command first."
    );
}

#[tokio::test]
async fn switch_log_level_goes_through_the_registered_reload_handle() {
    use tracing_subscriber::{filter::LevelFilter, prelude::*, reload};
    let fake = Fake::new();
    assert!(
        body(&qos(&fake), &["switchLogLevel", "debug"])
            .await
            .contains("registered no reloadable")
    );
    let (filter, handle) = reload::Layer::new(LevelFilter::INFO);
    let subscriber = tracing_subscriber::registry().with(filter);
    let q = Qos::new(fake.clone(), QosConfig::default()).with_log_levels(Arc::new(handle.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);
    assert!(!tracing::enabled!(tracing::Level::DEBUG));
    assert_eq!(body(&q, &["switchLogLevel", "2"]).await, "OK");
    assert_eq!(handle.clone_current(), Some(LevelFilter::DEBUG));
    assert!(tracing::enabled!(tracing::Level::DEBUG));
    assert_eq!(body(&q, &["switchLogLevel", "OFF"]).await, "OK");
    assert_eq!(handle.clone_current(), Some(LevelFilter::OFF));
}

#[tokio::test]
async fn router_snapshot_commands_switch_recording_by_pattern() {
    let fake = Fake::new();
    let q = qos(&fake);
    assert_eq!(
        body(&q, &["getRouterSnapshot"]).await,
        "args count should be 1. example getRouterSnapshot xx.xx.xxx.service"
    );
    assert_eq!(
        body(&q, &["getRouterSnapshot", "org.example.Remote.*"]).await,
        "org.example.Remote:2.0\n[ All Invokers:2 ] [ Valid Invokers: 1 ]\n\n[ mock ]\n[ tag ]\n\
         Invocation snapshot: disabled\n\n"
    );
    assert_eq!(body(&q, &["getRecentRouterSnapshot"]).await, "");
    assert_eq!(
        body(&q, &["enableRouterSnapshot", "org.example.Nothing"]).await,
        "OK. Found service count: 0. This will cause performance degradation, please be careful!"
    );
    assert_eq!(
        body(&q, &["enableRouterSnapshot", "org.example.Remote:2.0"]).await,
        "OK. Found service count: 1. This will cause performance degradation, please be careful!"
    );
    assert_eq!(
        body(&q, &["getEnabledRouterSnapshot"]).await,
        "org.example.Remote:2.0"
    );
    // Oldest first, as Java sorts them.
    assert_eq!(
        body(&q, &["getRecentRouterSnapshot"]).await,
        "[2026-01-01 00:00:00.000] a\n\n[2026-01-02 00:00:00.000] b"
    );
    assert_eq!(
        body(&q, &["disableRouterSnapshot", ".*"]).await,
        "OK. Found service count: 1"
    );
    assert_eq!(body(&q, &["getEnabledRouterSnapshot"]).await, "");
    assert!(matches!(
        run(&q, &["enableRouterSnapshot", "("], local()).await,
        Outcome::Failed(_)
    ));
}
