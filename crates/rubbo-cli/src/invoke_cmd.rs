//! `rubbo invoke <URL> <method> [JSON args…]`: a generic call (`$invoke`), the result
//! printed as JSON.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rubbo_common::{Arguments, Invocation, Payload, Protocol, Url, Value};
use rubbo_hessian2::{List, json_to_value, value_to_json};
use rubbo_protocol_dubbo::DubboProtocol;
use rubbo_protocol_dubbo::descriptor::GENERIC_DESC;
use serde_json::Value as Json;

pub(crate) fn run(
    url: &str,
    method: &str,
    args: &[String],
    types: Option<&str>,
) -> Result<ExitCode> {
    let url = Url::parse(url).with_context(|| format!("malformed URL \"{url}\""))?;
    if url.protocol() != Some("dubbo") {
        bail!(
            "only dubbo:// URLs can be invoked (got {:?})",
            url.protocol()
        );
    }
    let iface = url
        .service_interface()
        .context("the URL names no interface (dubbo://host:port/<interface>)")?
        .to_owned();
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
    let string_list = |items: Vec<Value>, ty: &str| {
        Value::List(List {
            type_name: Some(ty.into()),
            items,
        })
    };
    let mut inv = Invocation::new(iface.clone(), "$invoke")
        .with_parameter_types(GENERIC_DESC)
        .with_arguments(Arguments::Values(vec![
            Value::from(method),
            string_list(
                types.iter().map(|t| Value::from(t.as_str())).collect(),
                "[string",
            ),
            string_list(values, "[object"),
        ]))
        .with_attachment("generic", "true");
    if let Some(v) = url.version() {
        inv = inv.with_version(v.to_owned());
    }
    if let Some(g) = url.group() {
        inv = inv.with_group(g.to_owned());
    }
    let timeout = url.get_duration_ms("timeout", 3000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(async {
        let protocol = DubboProtocol::new();
        let invoker = tokio::time::timeout(
            timeout + Duration::from_secs(3),
            protocol.refer(url.with_param("timeout", timeout.as_millis().to_string())),
        )
        .await
        .context("connect timed out")??;
        let r = invoker.invoke(inv).await;
        invoker.destroy();
        anyhow::Ok(r)
    })?;
    match result.and_then(|r| r.into_payload()) {
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
