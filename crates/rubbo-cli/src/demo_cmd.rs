//! `rubbo demo`: providers and a consumer in one process over real sockets on
//! 127.0.0.1, discovering each other through the embedded `memory://` registry.
//!
//! It makes a few contract calls (printing what happened), then a bounded load of
//! `whoami` calls spread by the load balancer; with `--kill-one`, one provider
//! crashes half-way with calls in flight to it (its sockets drop, nothing is
//! unregistered) and fault tolerance keeps every call. The last line is one JSON
//! object: `{"calls":…, "ok":…, "failed":…, "by_provider":{"<id>":count,…},
//! "in_flight_at_crash":n}`.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rubbo::Rubbo;
use rubbo_common::keys;
use serde_json::json;

use crate::demo_service::{
    DemoProvider, DemoService, DemoServiceClient, DemoServiceServer, demo_user,
};
use crate::input::emit;

/// What the demo runs.
#[derive(Debug, Clone)]
pub(crate) struct DemoArgs {
    pub(crate) providers: usize,
    pub(crate) calls: usize,
    pub(crate) concurrency: usize,
    pub(crate) loadbalance: Option<String>,
    pub(crate) cluster: Option<String>,
    /// The consumer's call timeout in ms (`dubbo.consumer.timeout`, default 2000).
    pub(crate) timeout_ms: String,
    pub(crate) kill_one: bool,
}

pub(crate) fn run(args: &DemoArgs) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(demo(args))
}

async fn demo(args: &DemoArgs) -> Result<ExitCode> {
    let registry = "memory://127.0.0.1/demo";
    let factories = Arc::new(rubbo::registry_factories());
    let mut providers = Vec::new();
    for i in 0..args.providers.max(1) {
        let app = format!("demo-provider-{i}");
        let mut builder = Rubbo::builder()
            .application(app.clone())
            .registry(registry)
            .port(0)
            .registry_factories(factories.clone());
        // The first provider answers on a QoS port of its own (`ls`, `offline`,
        // probes), on a free port so that several demos can run at once.
        if i == 0 {
            builder = builder.qos_port(0);
        }
        let rubbo = builder.build()?;
        let provider = DemoProvider::default();
        let url = rubbo
            .export(DemoServiceServer::new(Arc::new(provider.clone())))
            .await
            .with_context(|| format!("cannot start provider {i}"))?;
        provider.set_identity(&app, "127.0.0.1", url.port());
        eprintln!(
            "provider {app} serving on {} (registered in {registry})",
            url.address()
        );
        if let Some(qos) = rubbo.qos_address() {
            eprintln!("provider {app} QoS port at {qos} (try: rubbo qos {qos} ls)");
        }
        providers.push((rubbo, provider));
    }

    let mut consumer = Rubbo::builder()
        .application("demo-consumer")
        .registry(registry)
        .registry_factories(factories.clone())
        .param(keys::TIMEOUT_KEY, args.timeout_ms.as_str());
    if let Some(lb) = &args.loadbalance {
        consumer = consumer.param(keys::LOADBALANCE_KEY, lb.as_str());
    }
    if let Some(c) = &args.cluster {
        consumer = consumer.param(keys::CLUSTER_KEY, c.as_str());
    }
    let consumer = consumer.build()?;
    let client = DemoServiceClient::new(
        consumer
            .refer(&DemoServiceClient::SERVICE)
            .await
            .context("the consumer found no provider")?,
    );
    eprintln!(
        "consumer discovered the providers of {}",
        DemoServiceClient::SERVICE.service_key()
    );

    // A few contract calls, to show the shapes.
    eprintln!(
        "echo(\"hello\") = {:?}",
        client.echo(Some("hello".into())).await?
    );
    eprintln!("echoInt(262144) = {}", client.echo_int(262_144).await?);
    let users = client.list_users(2).await?.unwrap_or_default();
    eprintln!(
        "listUsers(2) = {} users, first {:?}",
        users.len(),
        users.first().and_then(|u| u.name.clone())
    );
    let echoed = client.echo_user(Some(demo_user(7))).await?;
    eprintln!(
        "echoUser(user 7) round-trips: {}",
        echoed == Some(demo_user(7))
    );
    match client.fail(Some("boom".into())).await {
        Err(e) => eprintln!("fail(\"boom\") -> {e}"),
        Ok(v) => eprintln!("fail(\"boom\") unexpectedly returned {v:?}"),
    }

    // The load: `calls` whoami calls, `concurrency` at a time, bounded in time.
    let mut by_provider: BTreeMap<String, u64> = BTreeMap::new();
    let (mut ok, mut failed) = (0u64, 0u64);
    let deadline = Instant::now() + Duration::from_secs(120);
    let kill_at = args.calls / 2;
    let mut done = 0usize;
    // With --kill-one: the calls that were in flight to the victim when it crashed.
    let mut in_flight_at_crash: Option<usize> = None;
    while done < args.calls && Instant::now() < deadline {
        let batch = args.concurrency.max(1).min(args.calls - done);
        let finished = AtomicUsize::new(0);
        let calls = futures::future::join_all((0..batch).map(|_| async {
            let r = client.whoami().await;
            finished.fetch_add(1, Ordering::SeqCst);
            r
        }));
        let victim = providers
            .first()
            .filter(|_| args.kill_one && in_flight_at_crash.is_none() && done >= kill_at);
        let results = match victim {
            None => calls.await,
            Some((rubbo, provider)) => {
                // Crash it with calls inside: they are held in the provider until
                // every call of the batch is either held there or answered elsewhere.
                provider.hold();
                tokio::pin!(calls);
                let give_up = Instant::now() + Duration::from_secs(10);
                let mut results = None;
                while results.is_none() {
                    let held = provider.held();
                    let settled = held > 0 && held + finished.load(Ordering::SeqCst) >= batch;
                    if settled || Instant::now() > give_up {
                        eprintln!(
                            "crashing {} after {done} calls with {held} in flight to it \
                             (sockets drop, no unregister)",
                            rubbo.application()
                        );
                        rubbo.abort();
                        provider.release();
                        in_flight_at_crash = Some(held);
                        break;
                    }
                    tokio::select! {
                        r = &mut calls => results = Some(r),
                        () = tokio::time::sleep(Duration::from_millis(2)) => {}
                    }
                }
                // None held in this batch (all went elsewhere): the next one tries again.
                match results {
                    Some(r) => r,
                    None => calls.await,
                }
            }
        };
        for r in results {
            match r {
                Ok(Some(id)) => {
                    ok += 1;
                    *by_provider.entry(id).or_default() += 1;
                }
                Ok(None) => failed += 1,
                Err(e) => {
                    failed += 1;
                    eprintln!("call failed: {e}");
                }
            }
        }
        done += batch;
    }
    consumer.shutdown().await;
    for (p, _) in providers {
        p.shutdown().await;
    }
    let line = json!({
        "calls": done,
        "ok": ok,
        "failed": failed,
        "by_provider": by_provider,
        "in_flight_at_crash": in_flight_at_crash,
    });
    emit(&line.to_string())?;
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
