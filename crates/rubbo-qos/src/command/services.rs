//! `ls`, `ps`, `online`/`offline` and their `App`/`Interface` forms, `getAddress`.

use regex::Regex;
use serde_json::{Map, Value, json};

use crate::QosError;
use crate::host::{ConsumerRegistry, QosHost, Registration, RegistryScope};
use crate::table::{Align, Column, Table};

/// `zookeeper-I(Y)/nacos-A(N)`, as Java's `ServiceCheckUtils.getRegisterStatus`.
fn register_status(registrations: &[Registration]) -> String {
    registrations
        .iter()
        .map(|r| {
            format!(
                "{}-{}({})",
                r.registry,
                if r.application_level { "A" } else { "I" },
                if r.registered { "Y" } else { "N" }
            )
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// `zookeeper-I(2)`, as Java's `getConsumerAddressNum` for an interface-level
/// (`FORCE_INTERFACE`) or application-level reference.
fn address_num(registries: &[ConsumerRegistry]) -> String {
    registries
        .iter()
        .map(|r| {
            format!(
                "{}-{}({})",
                r.registry,
                if r.application_level { "A" } else { "I" },
                r.all.len()
            )
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// `ls`: the provider table (service key, registry state) and the consumer table
/// (service key, addresses per registry), each sorted by service key.
pub(super) fn ls(host: &dyn QosHost) -> String {
    let mut providers = host.providers();
    providers.sort_by(|a, b| a.service_key.cmp(&b.service_key));
    let mut t = Table::new(vec![
        Column::auto(Align::Middle),
        Column::auto(Align::Middle),
    ]);
    t.add_row(&["Provider Service Name", "PUB"]);
    for p in &providers {
        t.add_row(&[&p.service_key, &register_status(&p.registrations)]);
    }
    let mut out = String::from("As Provider side:\n");
    out.push_str(&t.render());

    let mut consumers = host.consumers();
    consumers.sort_by(|a, b| a.service_key.cmp(&b.service_key));
    let mut t = Table::new(vec![
        Column::auto(Align::Middle),
        Column::auto(Align::Middle),
    ]);
    t.add_row(&["Consumer Service Name", "NUM"]);
    for c in &consumers {
        t.add_row(&[&c.service_key, &address_num(&c.registries)]);
    }
    out.push_str("As Consumer side:\n");
    out.push_str(&t.render());
    out
}

/// `ps [-l] [port]`: the server ports (`-l`: `protocol://address`), or the peers
/// connected to one port.
pub(super) fn ps(host: &dyn QosHost, args: &[String]) -> String {
    let mut detail = false;
    let mut port = None;
    for a in args {
        if a == "-l" {
            detail = true;
        } else {
            match a.parse::<u16>() {
                Ok(p) => port = Some(p),
                Err(_) => return format!("Illegal port {a}, must be integer."),
            }
        }
    }
    let servers = host.servers();
    let Some(port) = port else {
        return servers
            .iter()
            .map(|s| {
                if detail {
                    format!("{}://{}", s.protocol, s.address)
                } else {
                    s.port.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\r\n");
    };
    if !servers.iter().any(|s| s.port == port) {
        return format!("No such port {port}");
    }
    match host.connections(port) {
        Some(peers) => peers
            .iter()
            .map(|(remote, local)| {
                if detail {
                    format!("{remote} -> {local}")
                } else {
                    remote.clone()
                }
            })
            .collect::<Vec<_>>()
            .join("\r\n"),
        None => format!("The connections of port {port} are not listed yet"),
    }
}

/// A service pattern as Java's `String.matches`: the whole key must match.
pub(super) fn pattern(p: &str) -> Result<Regex, QosError> {
    Regex::new(&format!("^(?:{p})$"))
        .map_err(|e| QosError::command(format!("bad service pattern {p}: {e}")))
}

/// `online`/`offline` (all, `App` or `Interface` registries): every provider whose
/// service key or display key (without group) matches the pattern (default `.*`) is
/// registered again or unregistered; `OK`, or `service not found`.
pub(super) async fn set(
    host: &dyn QosHost,
    pat: Option<&str>,
    scope: RegistryScope,
    registered: bool,
) -> Result<String, QosError> {
    let re = pattern(pat.unwrap_or(".*"))?;
    let keys: Vec<String> = host
        .providers()
        .into_iter()
        .filter(|p| re.is_match(&p.service_key) || re.is_match(&p.display_key))
        .map(|p| p.service_key)
        .collect();
    if keys.is_empty() {
        return Ok("service not found".to_owned());
    }
    host.set_registered(&keys, scope, registered).await?;
    Ok("OK".to_owned())
}

/// `getAddress <service key>`: each registry's providers for that reference, as
/// text (telnet) or JSON (HTTP). Rubbo's registries are interface-level
/// (`FORCE_INTERFACE`) unless a registry says it is application-level.
pub(super) fn get_address(host: &dyn QosHost, args: &[String], http: bool) -> String {
    let [service] = args else {
        return "Invalid parameters, please input like getAddress com.example.DemoService"
            .to_owned();
    };
    let mut text = String::new();
    let mut json = Map::new();
    for (i, c) in host
        .consumers()
        .iter()
        .filter(|c| &c.service_key == service)
        .enumerate()
    {
        let id = format!("{}@{i}", c.service_key);
        text.push_str(&format!("ConsumerModel: {id}\n\n"));
        let mut consumer = Map::new();
        for r in &c.registries {
            let (step, level) = if r.application_level {
                ("FORCE_APPLICATION", "Application-Level")
            } else {
                ("FORCE_INTERFACE", "Interface-Level")
            };
            text.push_str(&format!(
                "Registry: {}\nMigrationStep: {step}\n\n{level}: \n",
                r.registry_url
            ));
            for (name, urls) in [
                ("All", &r.all),
                ("Valid", &r.valid),
                ("Disabled", &r.disabled),
            ] {
                text.push_str(&format!("{name} Invokers: \n"));
                for u in urls {
                    text.push_str(u);
                    text.push('\n');
                }
                text.push('\n');
            }
            let lists = json!({ "All": r.all, "Valid": r.valid, "Disabled": r.disabled });
            let (this, other) = if r.application_level {
                ("Application-Level", "Interface-Level")
            } else {
                ("Interface-Level", "Application-Level")
            };
            consumer.insert(
                r.registry_url.clone(),
                json!({ "MigrationStep": step, "Invokers": { this: lists, other: {} } }),
            );
        }
        json.insert(id, Value::Object(consumer));
    }
    if http {
        Value::Object(json).to_string()
    } else {
        text
    }
}
