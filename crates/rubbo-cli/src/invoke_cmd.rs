//! `rubbo invoke <URL> <method> [JSON args…]`: a generic call (`$invoke`), the result
//! printed as JSON; with `--registry`, through the whole consumer path of a
//! [`Rubbo`] application (directory, routers, load balance, rules) instead of one
//! provider, and `--repeat N` calls, one result per line: the operator's way to see
//! routing and override rules at work.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rubbo::config::Config;
use rubbo::{GenericClient, Rubbo};
use rubbo_common::keys::{GENERIC_KEY, Param, TIMEOUT_KEY, Timeout};
use rubbo_common::{BoxInvoker, ErrorKind, Payload, RpcError, Url, Value};
use rubbo_hessian2::{json_to_value, value_to_json};
use serde_json::Value as Json;

/// The application name of the CLI's consumer when the configuration sets none.
pub(crate) const APPLICATION: &str = "rubbo-cli";
/// The call timeout when nothing sets one: longer than Java's 1000 ms
/// ([`Timeout::DEFAULT`]), for a tool talking to providers across a network.
pub(crate) const DEFAULT_TIMEOUT_MS: &str = "3000";
/// The filter that marks a generic reference's `$invoke` calls (`generic` attachment).
const GENERIC_IMPL_FILTER: &str = "genericimpl";
/// How long a reference through a registry waits for its first provider.
const DISCOVERY_WAIT: Duration = Duration::from_secs(10);

/// What to call, from the command line.
#[derive(Debug)]
pub(crate) struct InvokeArgs<'a> {
    /// A provider URL, or (through a registry) a service key.
    pub(crate) target: &'a str,
    pub(crate) method: &'a str,
    pub(crate) args: &'a [String],
    pub(crate) types: Option<&'a str>,
    /// `--registry` was given: `target` is a service key.
    pub(crate) via_registry: bool,
    pub(crate) repeat: u32,
}

/// The arguments of every call: dynamic values and their Java types.
pub(crate) struct CallArgs {
    pub(crate) values: Vec<Value>,
    pub(crate) types: Vec<String>,
}

impl CallArgs {
    /// JSON arguments and their Java types (`--types`, comma separated), the types
    /// inferred from the JSON when not given.
    pub(crate) fn parse(args: &[String], types: Option<&str>) -> Result<CallArgs> {
        let json_args: Vec<Json> = args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                serde_json::from_str(a)
                    .with_context(|| format!("argument {} is not JSON: {a}", i + 1))
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
        Ok(CallArgs {
            values: json_args.iter().map(json_to_value).collect(),
            types,
        })
    }
}

pub(crate) fn run(a: &InvokeArgs<'_>, config: &Config) -> Result<ExitCode> {
    let call = CallArgs::parse(a.args, a.types)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // A target with a scheme is one provider, unless a registry was asked for.
    if !a.via_registry && a.target.contains("://") {
        runtime.block_on(at_url(a, &call, config))
    } else {
        runtime.block_on(through_registry(a, &call, config))
    }
}

/// One provider, by URL, with the protocol the URL names (`dubbo`, `tri`).
async fn at_url(a: &InvokeArgs<'_>, call: &CallArgs, config: &Config) -> Result<ExitCode> {
    let client = connect(a.target, config).await?;
    let code = calls(&client, a, call, None).await;
    client.into_inner().destroy();
    code
}

/// A generic client of the one provider `target` names (`dubbo://` or `tri://`), on a
/// connection of its own: each call makes a new protocol instance, so two clients of
/// the same address do not share a connection (`rubbo bench --connections`).
pub(crate) async fn connect(target: &str, config: &Config) -> Result<GenericClient> {
    let invoker = refer(target, config, true).await?;
    // Only the generic marker: the CLI's calls carry nothing else a filter adds.
    let generic_impl = rubbo::builtin_filters().get(GENERIC_IMPL_FILTER)?;
    Ok(GenericClient::new(generic_impl.layer(invoker)))
}

/// An invoker of the one provider `target` names, on a connection of its own, with
/// the configuration's reference and consumer parameters; a generic reference
/// (`generic=true`) when `generic`, else one for calls of the methods themselves
/// (`rubbo bench --typed`). No filter is added.
pub(crate) async fn refer(target: &str, config: &Config, generic: bool) -> Result<BoxInvoker> {
    let url = Url::parse(target).with_context(|| format!("malformed URL \"{target}\""))?;
    let protocols = rubbo::protocols();
    let protocol = url
        .protocol()
        .filter(|p| protocols.contains(p))
        .with_context(|| {
            format!(
                "cannot invoke {:?} URLs: known protocols are {}",
                url.protocol().unwrap_or(""),
                protocols.names().join(", ")
            )
        })?;
    let protocol = protocols.get(protocol)?;
    let interface = url
        .service_interface()
        .context("the URL names no interface (dubbo://host:port/<interface>)")?
        .to_owned();
    // The URL's own parameters win over the configuration's (--set, env, --config).
    let url = url
        .with_params_if_absent(
            config
                .reference(&interface)
                .map(|r| r.url_params())
                .unwrap_or_default(),
        )
        .with_params_if_absent(&config.consumer().params);
    let timeout = url
        .get_param(TIMEOUT_KEY)
        .and_then(Timeout::parse)
        .unwrap_or(Timeout::DEFAULT);
    let mut url = url.with_param(TIMEOUT_KEY, timeout.as_millis().to_string());
    if generic {
        url = url.with_param(GENERIC_KEY, "true");
    }
    let invoker = tokio::time::timeout(timeout + Duration::from_secs(3), protocol.refer(url))
        .await
        .context("connect timed out")??;
    Ok(invoker)
}

/// Through the configured registries, as an application's consumer would call.
async fn through_registry(
    a: &InvokeArgs<'_>,
    call: &CallArgs,
    config: &Config,
) -> Result<ExitCode> {
    if config.registries().is_empty() {
        bail!(
            "{:?} is not a URL and no registry is configured: give --registry ADDRESS \
             (or --set dubbo.registry.address=..)",
            a.target
        );
    }
    let (group, interface, version) = parse_service_key(a.target)?;
    let app = Rubbo::from_config(config).context("cannot build the consumer")?;
    let result = async {
        let client = app
            .refer_generic(interface, version, group)
            .await
            .with_context(|| format!("cannot refer {}", a.target))?;
        calls(&client, a, call, Some(Instant::now() + DISCOVERY_WAIT)).await
    }
    .await;
    app.shutdown().await;
    result
}

/// `[group/]interface[:version]`, as Java's service keys: (group, interface, version),
/// `""` when unset.
fn parse_service_key(key: &str) -> Result<(&str, &str, &str)> {
    let (group, rest) = key.split_once('/').unwrap_or(("", key));
    let (interface, version) = rest.split_once(':').unwrap_or((rest, ""));
    if interface.is_empty() || interface.contains(['/', ':', '?', '&', '=']) {
        bail!("bad service key {key:?}: expected [group/]interface[:version]");
    }
    Ok((group, interface, version))
}

/// Makes the calls one after another, printing each result on stdout (pretty JSON
/// for a single call, one compact line each for several) and each failure on stderr.
/// Exit 1 when any call failed.
///
/// With `discovery`, a call that finds no provider before that instant is made again
/// (after a short pause) instead of failing: the registry's first notification may
/// not have arrived yet.
async fn calls(
    client: &GenericClient,
    a: &InvokeArgs<'_>,
    call: &CallArgs,
    mut discovery: Option<Instant>,
) -> Result<ExitCode> {
    let types: Vec<&str> = call.types.iter().map(String::as_str).collect();
    let mut failed = 0u32;
    for i in 1..=a.repeat {
        let result = loop {
            let r = client
                .invoke_payload(a.method, &types, call.values.clone())
                .await;
            match (&r, discovery) {
                (Err(e), Some(until)) if no_provider(e) && Instant::now() < until => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                _ => break r,
            }
        };
        // Providers are known once one call got through to one.
        discovery = None;
        match result {
            Ok(p) => print_payload(&p, a.repeat > 1)?,
            Err(e) => {
                failed += 1;
                if a.repeat > 1 {
                    eprintln!("rubbo: call {i} failed: {e}");
                } else {
                    eprintln!("rubbo: call failed: {e}");
                }
            }
        }
    }
    if failed > 0 && a.repeat > 1 {
        eprintln!("rubbo: {failed} of {} calls failed", a.repeat);
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn no_provider(e: &RpcError) -> bool {
    e.kind() == ErrorKind::NoProvider
}

fn print_payload(p: &Payload, compact: bool) -> Result<()> {
    let json = match p {
        Payload::Null => Json::Null,
        p => value_to_json(&p.to_value()?),
    };
    let text = if compact {
        serde_json::to_string(&json)?
    } else {
        serde_json::to_string_pretty(&json)?
    };
    crate::input::emit(&text)
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
