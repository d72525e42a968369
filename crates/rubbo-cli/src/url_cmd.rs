//! `rubbo url <URL>`: a URL's parts as JSON.

use anyhow::{Context, Result};
use rubbo_common::url::decode;
use rubbo_common::{Url, keys};
use serde_json::{Map, Value, json};

pub(crate) fn run(input: &str) -> Result<()> {
    let url = parse_any(input)?;
    let out = url_json(&url, true)?;
    crate::input::emit(&serde_json::to_string_pretty(&out)?)?;
    Ok(())
}

/// A plain URL, or one encoded whole (a ZooKeeper node name: `dubbo%3A%2F%2F...`).
fn parse_any(input: &str) -> Result<Url> {
    let input = input.trim();
    let looks_encoded = !input.contains("://") && input.contains("%3A%2F");
    let parsed = if looks_encoded {
        Url::parse_encoded(input)
    } else {
        Url::parse(input)
    };
    parsed.with_context(|| format!("malformed URL \"{input}\""))
}

fn url_json(url: &Url, with_nested: bool) -> Result<Value> {
    let mut params = Map::new();
    let mut nested = Map::new();
    for (k, v) in url.params().iter() {
        if with_nested && (k == keys::EXPORT_KEY || k == keys::REFER_KEY) {
            let decoded = decode(v).with_context(|| format!("parameter {k} is not decodable"))?;
            let inner = if k == keys::REFER_KEY && !decoded.contains("://") {
                // `refer` holds only the consumer's parameters: `k=v&k=v`.
                Url::parse(&format!("?{decoded}"))
            } else {
                Url::parse(&decoded)
            }
            .with_context(|| format!("nested {k} URL \"{decoded}\" is malformed"))?;
            nested.insert(k.to_owned(), url_json(&inner, false)?);
            params.insert(k.to_owned(), Value::String(decoded));
        } else {
            params.insert(k.to_owned(), Value::String(v.to_owned()));
        }
    }
    let mut out = json!({
        "protocol": url.protocol(),
        "username": url.username(),
        "password": url.password(),
        "host": url.host(),
        "port": (url.port() > 0).then_some(url.port()),
        "path": url.path(),
        "parameters": params,
    });
    if with_nested {
        out["nested"] = json!({
            "export": nested.remove(keys::EXPORT_KEY),
            "refer": nested.remove(keys::REFER_KEY),
        });
    }
    Ok(out)
}
