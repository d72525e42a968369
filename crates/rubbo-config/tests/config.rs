//! The property tree end to end: files, environment, `--set`, code, and the typed
//! sections built from them.

// The log-capturing writer below unwraps its own mutex outside a `#[test]`.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use rubbo_config::{Config, ConfigError, Source};

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

const YAML: &str = "\
dubbo:
  application:
    name: from-yaml
  registry:
    address: zookeeper://127.0.0.1:2181
    group: dev
  registries:
    r2:
      address: 127.0.0.1:2182|127.0.0.1:2183
      protocol: zookeeper
  protocols:
    dubbo:
      port: 20881
    tri:
      port: -1
  provider:
    timeout: 1500
  consumer:
    check: false
    retries: 0
  references:
    org.example.Greeter:
      loadbalance: roundrobin
      methods:
        hello:
          timeout: 250
          mock: return null
  services:
    org.example.Greeter:
      weight: 50
";

#[test]
fn every_source_in_precedence_order() {
    // Key k<n> is set by source n and every weaker one: the strongest must win.
    let props = "dubbo.application.k1=props\ndubbo.application.k2=props\n\
                 dubbo.application.k3=props\ndubbo.application.k4=props\n\
                 dubbo.application.k5=props\n";
    let yaml = "dubbo:\n  application:\n    k2: yaml\n    k3: yaml\n    k4: yaml\n    k5: yaml\n";
    let config = Config::loader()
        .code("dubbo.application.k5", "code")
        .set("dubbo.application.k4", "set")
        .set("dubbo.application.k5", "set")
        .default_value("dubbo.application.k0", "default")
        .default_value("dubbo.application.k5", "default")
        .properties("dubbo.properties", props)
        .unwrap()
        .yaml("application.yml", yaml)
        .unwrap()
        .env_vars(env(&[
            ("DUBBO_APPLICATION_K3", "env"),
            ("DUBBO_APPLICATION_K4", "env"),
            ("DUBBO_APPLICATION_K5", "env"),
        ]))
        .load()
        .unwrap();
    let got: Vec<_> = (0..=5)
        .map(|i| config.get(&format!("dubbo.application.k{i}")).unwrap())
        .collect();
    assert_eq!(got, ["default", "props", "yaml", "env", "set", "code"]);
    let src = |k: &str| config.entry(k).unwrap().source.clone();
    assert_eq!(src("dubbo.application.k0"), Source::Default);
    assert_eq!(
        src("dubbo.application.k1"),
        Source::File {
            path: "dubbo.properties".into(),
            line: 1
        }
    );
    assert_eq!(
        src("dubbo.application.k2"),
        Source::File {
            path: "application.yml".into(),
            line: 3
        }
    );
    assert_eq!(
        src("dubbo.application.k3"),
        Source::Env {
            var: "DUBBO_APPLICATION_K3".into()
        }
    );
    assert_eq!(src("dubbo.application.k4"), Source::Set);
    assert_eq!(src("dubbo.application.k5"), Source::Code);
}

/// Java's `Environment` order: environment > the config center's application
/// `dubbo.properties` > its global one > `application.yml` > `dubbo.properties`.
#[test]
fn config_center_properties_sit_between_the_environment_and_the_files() {
    let config = Config::loader()
        .properties("dubbo.properties", "dubbo.application.k1=props\ndubbo.application.k2=props\ndubbo.application.k3=props\ndubbo.application.k4=props\n")
        .unwrap()
        .yaml("application.yml", "dubbo:\n  application:\n    k1: yaml\n    k2: yaml\n    k3: yaml\n    k4: yaml\n")
        .unwrap()
        .config_center_properties("dubbo.properties", "dubbo", false, "dubbo.application.k2=global\ndubbo.application.k3=global\ndubbo.application.k4=global\n")
        .unwrap()
        .config_center_properties("dubbo.properties", "web", true, "dubbo.application.k3=app\ndubbo.application.k4=app\n")
        .unwrap()
        .env_vars(env(&[("DUBBO_APPLICATION_K4", "env")]))
        .load()
        .unwrap();
    let got: Vec<_> = (1..=4)
        .map(|i| config.get(&format!("dubbo.application.k{i}")).unwrap())
        .collect();
    assert_eq!(got, ["yaml", "global", "app", "env"]);
    let src = config.entry("dubbo.application.k3").unwrap().source.clone();
    assert_eq!(
        src,
        Source::ConfigCenter {
            entry: "web/dubbo.properties".into(),
            line: 1,
            application: true
        }
    );
    assert_eq!(src.to_string(), "config center web/dubbo.properties:1");
}

#[test]
fn later_files_of_a_kind_win_and_yaml_beats_properties() {
    let config = Config::loader()
        .yaml("b.yml", "dubbo.application.name: second\n")
        .unwrap()
        .properties("a.properties", "dubbo.application.name=props\n")
        .unwrap()
        .yaml("c.yml", "dubbo.application.name: third\n")
        .unwrap()
        .load()
        .unwrap();
    assert_eq!(config.application().name.as_deref(), Some("third"));
}

#[test]
fn environment_uses_javas_names() {
    let config = Config::loader()
        .yaml("application.yml", YAML)
        .unwrap()
        .env_vars(env(&[
            ("DUBBO_REGISTRY_ADDRESS", "zookeeper://10.0.0.1:2181"),
            ("DUBBO_APPLICATION_QOS_PORT", "22223"),
            // r2 is named by the file: its attributes can come from the environment.
            ("DUBBO_REGISTRIES_R2_GROUP", "blue"),
            // r9 is named nowhere else: `_` cannot tell an id from an attribute.
            ("DUBBO_REGISTRIES_R9_ADDRESS", "zookeeper://10.0.0.9:2181"),
            ("dubbo.consumer.timeout", "900"),
            ("UNRELATED", "x"),
        ]))
        .load()
        .unwrap();
    assert_eq!(
        config.registries()[0].address.as_deref(),
        Some("zookeeper://10.0.0.1:2181")
    );
    assert_eq!(
        config.entry("dubbo.registry.address").unwrap().source,
        Source::Env {
            var: "DUBBO_REGISTRY_ADDRESS".into()
        }
    );
    assert_eq!(config.get("dubbo.application.qos-port"), Some("22223"));
    assert_eq!(config.get("dubbo.registries.r2.group"), Some("blue"));
    assert_eq!(config.registries().len(), 2);
    assert_eq!(
        config.consumer().params.get("timeout").map(String::as_str),
        Some("900")
    );
    assert!(config.iter().all(|(k, _)| k != "UNRELATED"));
}

#[test]
fn typed_sections() {
    let config = Config::loader()
        .yaml("application.yml", YAML)
        .unwrap()
        .load()
        .unwrap();
    assert!(
        config.unknown_keys().is_empty(),
        "{:?}",
        config.unknown_keys()
    );
    assert_eq!(config.application().name.as_deref(), Some("from-yaml"));

    let regs = config.registries();
    assert_eq!(regs[0].id, None);
    assert_eq!(regs[0].urls(), ["zookeeper://127.0.0.1:2181?group=dev"]);
    assert_eq!(regs[1].id.as_deref(), Some("r2"));
    assert_eq!(
        regs[1].urls(),
        ["zookeeper://127.0.0.1:2182", "zookeeper://127.0.0.1:2183"]
    );

    let protos: Vec<_> = config
        .protocols()
        .iter()
        .map(|p| (p.name.as_str(), p.port))
        .collect();
    assert_eq!(protos, [("dubbo", Some(20881)), ("tri", None)]);

    assert_eq!(
        config.provider().params.get("timeout").map(String::as_str),
        Some("1500")
    );
    assert_eq!(
        config.consumer().params.get("check").map(String::as_str),
        Some("false")
    );

    let r = config.reference("org.example.Greeter").unwrap();
    assert_eq!(r.methods.len(), 1);
    assert_eq!(r.methods[0].name, "hello");
    assert_eq!(r.methods[0].timeout, Some(250));
    assert_eq!(r.methods[0].mock.as_deref(), Some("return null"));
    let mut params = r.url_params();
    params.sort();
    let want = [
        ("hello.mock", "return null"),
        ("hello.timeout", "250"),
        ("loadbalance", "roundrobin"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    assert_eq!(params, want);
    let s = config.service("org.example.Greeter").unwrap();
    assert_eq!(s.url_params(), [("weight".to_owned(), "50".to_owned())]);
}

#[test]
fn javas_singular_prefixes_and_properties_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dubbo.properties");
    std::fs::write(
        &path,
        "# Java's own layout\n\
         dubbo.reference.org.example.Greeter.hello.retries = 3\n\
         dubbo.reference.org.example.Greeter.check: false\n\
         dubbo.service.org.example.Greeter.methods = x\n",
    )
    .unwrap();
    let config = Config::loader().file(&path).unwrap().load().unwrap();
    let r = config.reference("org.example.Greeter").unwrap();
    assert_eq!(r.params.get("check").map(String::as_str), Some("false"));
    assert_eq!(r.methods[0].retries, Some(3));
    // `methods` is not an attribute a service takes.
    assert_eq!(config.unknown_keys().len(), 1);
    assert_eq!(
        config.unknown_keys()[0].1,
        Source::File {
            path: path.display().to_string(),
            line: 4
        }
    );
}

#[test]
fn a_type_error_names_the_key_the_file_and_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("application.yml");
    std::fs::write(
        &path,
        "dubbo:\n  application:\n    name: x\n  protocol:\n    port: abc\n",
    )
    .unwrap();
    let err = Config::loader().file(&path).unwrap().load().unwrap_err();
    match &err {
        ConfigError::Type { key, value, at, .. } => {
            assert_eq!(key, "dubbo.protocol.port");
            assert_eq!(value, "abc");
            assert_eq!(
                at,
                &Source::File {
                    path: path.display().to_string(),
                    line: 5
                }
            );
        }
        other => panic!("want a type error, got {other}"),
    }
    let text = err.to_string();
    assert!(text.contains("dubbo.protocol.port"), "{text}");
    assert!(text.contains("application.yml:5"), "{text}");

    // From `--set` and the environment too.
    let err = Config::loader()
        .set_arg("dubbo.consumer.check=maybe")
        .unwrap()
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("--set"), "{err}");
    let err = Config::loader()
        .env_vars(env(&[("DUBBO_PROVIDER_TIMEOUT", "soon")]))
        .load()
        .unwrap_err();
    assert!(err.to_string().contains("DUBBO_PROVIDER_TIMEOUT"), "{err}");
}

#[test]
fn syntax_errors_and_bad_files() {
    let err = Config::loader()
        .yaml("bad.yml", "dubbo:\n  a: [1,\n")
        .unwrap_err();
    assert!(matches!(err, ConfigError::Syntax { .. }), "{err}");
    assert!(err.to_string().starts_with("bad.yml:"), "{err}");
    let err = Config::loader().file("/nonexistent/app.yml").unwrap_err();
    assert!(matches!(err, ConfigError::Io { .. }), "{err}");
    let err = Config::loader().file("app.toml").unwrap_err();
    assert!(matches!(err, ConfigError::UnknownFileKind { .. }), "{err}");
    assert!(matches!(
        Config::loader().set_arg("no-equals"),
        Err(ConfigError::BadSet { .. })
    ));
    let (k, v) = rubbo_config::parse_set_arg(" dubbo.x = a=b").unwrap();
    assert_eq!((k.as_str(), v.as_str()), ("dubbo.x", " a=b"));
}

/// Collects what the `fmt` subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn unknown_keys_are_warned_about_once_each_with_their_source() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let config = tracing::subscriber::with_default(subscriber, || {
        Config::loader()
            .yaml(
                "application.yml",
                "spring:\n  port: 1\ndubbo:\n  application:\n    nmae: typo\n  bogus: 1\n",
            )
            .unwrap()
            .load()
            .unwrap()
    });
    let keys: Vec<&str> = config
        .unknown_keys()
        .iter()
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(keys, ["dubbo.application.nmae", "dubbo.bogus"]);
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let warns: Vec<&str> = log.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(warns.len(), 2, "{log}");
    assert!(warns[0].contains("dubbo.application.nmae"), "{log}");
    assert!(warns[0].contains("application.yml:5"), "{log}");
    assert!(!log.contains("spring"), "{log}");
}

#[test]
fn ssl_keys_split_into_server_and_client_url_params() {
    let config = Config::loader()
        .yaml(
            "application.yml",
            "dubbo:\n  ssl:\n    server-key-cert-chain-path: /c/server.pem\n    serverPrivateKeyPath: /c/server.key\n    client-trust-cert-collection-path: /c/ca.pem\n",
        )
        .unwrap()
        .set("dubbo.ssl.client-key-cert-chain-path", "/c/client.pem")
        .env_vars(env(&[("DUBBO_SSL_CLIENT_PRIVATE_KEY_PATH", "/c/client.key")]))
        .load()
        .unwrap();
    assert!(
        config.unknown_keys().is_empty(),
        "{:?}",
        config.unknown_keys()
    );
    let pairs = |v: Vec<(String, String)>| -> Vec<String> {
        v.into_iter().map(|(k, v)| format!("{k}={v}")).collect()
    };
    assert_eq!(
        pairs(config.ssl().server_params()),
        [
            "server-key-cert-chain-path=/c/server.pem",
            "server-private-key-path=/c/server.key"
        ]
    );
    assert_eq!(
        pairs(config.ssl().client_params()),
        [
            "client-key-cert-chain-path=/c/client.pem",
            "client-private-key-path=/c/client.key",
            "client-trust-cert-collection-path=/c/ca.pem"
        ]
    );
}
