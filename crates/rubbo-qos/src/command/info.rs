//! `help`, the probes, `getConfig`, `shutdown`.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::{COMMANDS, Reply, command};
use crate::host::{ConfigSection, QosHost};
use crate::table::{Align, Column, Table};

/// `help`: every command with its summary; `help <name>`: its name and examples.
pub(super) fn help(name: Option<&str>) -> String {
    let mut t = Table::new(vec![
        Column::auto(Align::Right),
        Column::fixed(80, Align::Left),
    ])
    .padding(1);
    match name {
        None => {
            for c in COMMANDS {
                t.add_row(&[c.name, c.summary]);
            }
        }
        Some(name) => {
            let Some(c) = command(name) else {
                return format!("no such command:{name}");
            };
            t.add_row(&["COMMAND NAME", c.name]);
            let examples: String = c.example.iter().map(|e| format!("{e}\n")).collect();
            t.add_row(&["EXAMPLE", &examples]);
        }
    }
    t.render()
}

/// A probe's answer: `true` with 200, or `false` with 503.
pub(super) fn probe(ok: bool) -> Reply {
    Reply {
        status: if ok { 200 } else { 503 },
        body: ok.to_string(),
    }
}

/// Readiness as Java's two built-in probes: deploying is done
/// (`DeployerReadinessProbe`), and with services exported, at least one is online
/// in some registry or exported without one (`ProviderReadinessProbe`).
pub(super) fn ready(host: &dyn QosHost) -> bool {
    let providers = host.providers();
    let any_online = providers.is_empty()
        || providers
            .iter()
            .any(|p| p.registrations.is_empty() || p.registrations.iter().any(|r| r.registered));
    host.deployed() && any_online
}

/// Java's `isMatch`: no argument matches all, one the type, two the type and id.
fn matches(section: &ConfigSection, args: &[String]) -> bool {
    match args {
        [kind] => *kind == section.kind,
        [kind, id] => *kind == section.kind && Some(id) == section.id.as_ref(),
        _ => true,
    }
}

/// A section as Java's `AbstractConfig.toString` writes one:
/// `<dubbo:registry address="..." />`.
fn xml(section: &ConfigSection) -> String {
    let tag = section
        .kind
        .strip_suffix("Config")
        .unwrap_or(&section.kind)
        .to_ascii_lowercase();
    let mut s = format!("<dubbo:{tag}");
    for (k, v) in &section.attributes {
        s.push_str(&format!(" {k}=\"{v}\""));
    }
    s.push_str(" />");
    s
}

/// `getConfig [type [id]]`: the running configuration, as text (telnet) or JSON
/// (HTTP), under the application's name.
pub(super) fn get_config(host: &dyn QosHost, args: &[String], http: bool) -> String {
    let app = host.application();
    let mut text = format!("ApplicationModel: {app}\n");
    let mut json = Map::new();
    for s in host.config().iter().filter(|s| matches(s, args)) {
        let id = s.id.clone().unwrap_or_else(|| "(empty)".to_owned());
        text.push_str(&format!("{}: {id}\n{}\n\n", s.kind, xml(s)));
        let attrs: Map<String, Value> = s
            .attributes
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        match &s.id {
            // A single one (ApplicationConfig) sits under its type, the others by id.
            None => {
                json.insert(s.kind.clone(), Value::Object(attrs));
            }
            Some(id) => {
                if let Value::Object(m) = json
                    .entry(s.kind.clone())
                    .or_insert_with(|| Value::Object(Map::new()))
                {
                    m.insert(id.clone(), Value::Object(attrs));
                }
            }
        }
    }
    if http {
        let mut root = Map::new();
        root.insert(app, Value::Object(json));
        Value::Object(root).to_string()
    } else {
        text
    }
}

/// `shutdown [-t ms]`: waits `ms`, shuts the application down, says how long it took.
pub(super) async fn shutdown(host: &dyn QosHost, args: &[String]) -> String {
    let wait = match args {
        [] => 0,
        [t, ms] if t == "-t" => match ms.parse::<u64>() {
            Ok(ms) => ms,
            Err(_) => return "Invalid parameter,please input like shutdown -t 10000".to_owned(),
        },
        _ => return "Invalid parameter,please input like shutdown -t 10000".to_owned(),
    };
    let start = Instant::now();
    if wait > 0 {
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
    host.shutdown().await;
    format!(
        "Application has shutdown successfully\r\nelapsed: {} ms.",
        start.elapsed().as_millis()
    )
}
