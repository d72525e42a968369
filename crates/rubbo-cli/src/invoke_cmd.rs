//! `rubbo invoke <URL> <method> [JSON args…]`: a generic call (`$invoke`), the result
//! printed as JSON.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rubbo::GenericClient;
use rubbo::config::Config;
use rubbo_common::keys::{self, GENERIC_KEY, Param, TIMEOUT_KEY, Timeout};
use rubbo_common::{Payload, Protocol, Url, Value};
use rubbo_hessian2::{json_to_value, value_to_json};
use rubbo_protocol_dubbo::DubboProtocol;
use serde_json::Value as Json;

/// The only protocol the CLI calls (it refers with [`DubboProtocol`]).
const DUBBO: &str = keys::defaults::PROTOCOL;
/// The call timeout when the URL sets none: longer than Java's 1000 ms
/// ([`Timeout::DEFAULT`]), for a tool talking to providers across a network.
const DEFAULT_TIMEOUT: Duration = Duration::from_millis(3000);
/// The filter that marks a generic reference's `$invoke` calls (`generic` attachment).
const GENERIC_IMPL_FILTER: &str = "genericimpl";

pub(crate) fn run(
    url: &str,
    method: &str,
    args: &[String],
    types: Option<&str>,
    config: &Config,
) -> Result<ExitCode> {
    let url = Url::parse(url).with_context(|| format!("malformed URL \"{url}\""))?;
    if url.protocol() != Some(DUBBO) {
        bail!(
            "only dubbo:// URLs can be invoked (got {:?})",
            url.protocol()
        );
    }
    let interface = url
        .service_interface()
        .context("the URL names no interface (dubbo://host:port/<interface>)")?
        .to_owned();
    // The URL's own parameters win over the configuration's (--set, env, --config).
    let mut url = url.with_params_if_absent(
        config
            .reference(&interface)
            .map(|r| r.url_params())
            .unwrap_or_default(),
    );
    url = url.with_params_if_absent(&config.consumer().params);
    let json_args: Vec<Json> = args
        .iter()
        .enumerate()
        .map(|(i, a)| {
            serde_json::from_str(a).with_context(|| format!("argument {} is not JSON: {a}", i + 1))
        })
        .collect::<Result<_>>()?;
    let types: Vec<String> = match types {
        Some(t) => t
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        None => json_args.iter().map(infer_type).collect(),
    };
    if types.len() != json_args.len() {
        bail!("{} --types for {} arguments", types.len(), json_args.len());
    }
    let values: Vec<Value> = json_args.iter().map(json_to_value).collect();
    let types: Vec<&str> = types.iter().map(String::as_str).collect();
    let timeout = url
        .get_param(TIMEOUT_KEY)
        .and_then(Timeout::parse)
        .unwrap_or(DEFAULT_TIMEOUT);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        let protocol = DubboProtocol::new();
        let invoker = tokio::time::timeout(
            timeout + Duration::from_secs(3),
            protocol.refer(
                url.with_param(TIMEOUT_KEY, timeout.as_millis().to_string())
                    .with_param(GENERIC_KEY, "true"),
            ),
        )
        .await
        .context("connect timed out")??;
        // Only the generic marker: the CLI's calls carry nothing else a filter adds.
        let generic_impl = rubbo::builtin_filters().get(GENERIC_IMPL_FILTER)?;
        let client = GenericClient::new(generic_impl.layer(invoker));
        let r = client.invoke_payload(method, &types, values).await;
        client.into_inner().destroy();
        anyhow::Ok(r)
    })?;
    match result {
        Ok(Payload::Null) => crate::input::emit("null")?,
        Ok(p) => {
            let v = p.to_value()?;
            crate::input::emit(&serde_json::to_string_pretty(&value_to_json(&v))?)?;
        }
        Err(e) => {
            eprintln!("rubbo: call failed: {e}");
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The Java parameter type a JSON argument most likely stands for.
fn infer_type(j: &Json) -> String {
    match j {
        Json::Null => "java.lang.Object",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.as_i64().is_some_and(|v| i32::try_from(v).is_ok()) => "int",
        Json::Number(n) if n.is_i64() || n.is_u64() => "long",
        Json::Number(_) => "double",
        Json::String(_) => "java.lang.String",
        Json::Array(_) => "java.util.List",
        Json::Object(o) => match o.get("@class").and_then(Json::as_str) {
            Some(c) => return c.to_owned(),
            None => "java.util.Map",
        },
    }
    .to_owned()
}
