//! `rubbo`: the Rubbo command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench_cmd;
mod bench_load;
mod bench_service;
mod config_args;
mod decode_cmd;
mod demo_cmd;
mod demo_service;
mod input;
mod invoke_cmd;
mod qos_cmd;
mod url_cmd;

/// Rubbo: Apache Dubbo, in Rust.
#[derive(Debug, Parser)]
#[command(name = "rubbo", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// A configuration file in Java's property tree (`.yml`/`.yaml` with a `dubbo:`
    /// root, or `.properties`); repeatable, later files winning.
    #[arg(long = "config", global = true, value_name = "FILE")]
    config: Vec<PathBuf>,
    /// A Java property (`--set dubbo.consumer.timeout=500`); repeatable. Beats the
    /// environment and the files; a command's explicit flag beats it.
    #[arg(long = "set", global = true, value_name = "KEY=VALUE")]
    set: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the development registry: an in-memory registry server for local work
    /// across processes (providers and consumers use `dubbo://127.0.0.1:<port>` as
    /// registry address). Prints `READY registry <port>`; Ctrl-C stops it. For
    /// development only: use ZooKeeper in production.
    Registry {
        /// Port (0 picks a free one).
        #[arg(long, default_value_t = 9090)]
        port: u16,
        /// Host to bind.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
    },
    /// Run providers and a consumer in one process over real sockets on 127.0.0.1,
    /// discovering each other through the embedded registry; print what happened and
    /// end with one JSON line of call counts.
    Demo {
        /// How many providers.
        #[arg(long, default_value_t = 3)]
        providers: usize,
        /// How many calls in the load phase.
        #[arg(long, default_value_t = 1000)]
        calls: usize,
        /// Calls in flight at once.
        #[arg(long, default_value_t = 8)]
        concurrency: usize,
        /// Load balance policy (random, roundrobin, leastactive, shortestresponse, consistenthash, p2c).
        #[arg(long)]
        loadbalance: Option<String>,
        /// Fault tolerance strategy (failover, failfast, failsafe, failback, forking, broadcast, available).
        #[arg(long)]
        cluster: Option<String>,
        /// Crash one provider half-way (sockets drop, nothing unregistered).
        #[arg(long)]
        kill_one: bool,
    },
    /// Print a Dubbo URL's parts as one JSON object (accepts the percent-encoded form
    /// found in ZooKeeper node names too).
    Url {
        /// The URL, plain or encoded whole.
        url: String,
    },
    /// Decode captured bytes as JSON.
    Decode {
        #[command(subcommand)]
        format: DecodeFormat,
    },
    /// Call a method generically (`$invoke`) and print the result as JSON, one line per
    /// call.
    ///
    /// At a provider: rubbo invoke 'dubbo://127.0.0.1:20880/org.rubbo.interop.InteropService?version=1.0.0' echo '"hi"'
    ///
    /// Through a registry (directory, routers, load balance and rules, as an application's
    /// consumer): rubbo invoke --registry zookeeper://127.0.0.1:2181 org.rubbo.interop.InteropService:1.0.0 whoami --repeat 20
    Invoke {
        /// The provider URL (dubbo:// or tri://host:port/<interface>?version=..&group=..&timeout=..),
        /// or with a registry the service key `[group/]interface[:version]`.
        target: String,
        /// The method name.
        method: String,
        /// Arguments, one JSON value each (objects with "@class" are Java objects).
        args: Vec<String>,
        /// Java parameter types, comma separated (default: inferred from the JSON).
        #[arg(long)]
        types: Option<String>,
        /// Find the providers through this registry (zookeeper://.., or the development
        /// registry's dubbo://..) instead of calling one URL; the same as
        /// `--set dubbo.registry.address=..`.
        #[arg(long)]
        registry: Option<String>,
        /// How many calls to make, one after another (each result on its own line).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
        repeat: u32,
    },
    /// Put load on one provider and report calls/s, latency percentiles (HDR
    /// histogram) and errors by kind: closed loop (`-c` calls in flight) or open loop
    /// (`--rate`). Bounded: `-n` calls (at most 10 minutes), or `-d` (default 10 s).
    /// Exit 1 when any call failed.
    ///
    /// rubbo bench 'dubbo://127.0.0.1:20880/org.rubbo.interop.InteropService?version=1.0.0' echo '"hi"' -c 32 -d 10s
    Bench {
        /// The provider URL (dubbo:// or tri://host:port/<interface>?version=..&timeout=..).
        target: String,
        /// The method name.
        method: String,
        /// Arguments, one JSON value each (objects with "@class" are Java objects).
        args: Vec<String>,
        /// Java parameter types, comma separated (default: inferred from the JSON).
        #[arg(long)]
        types: Option<String>,
        /// Call METHOD itself (a plain request with the parameter types' descriptor,
        /// the arguments encoded once), as a consumer of the Java interface does,
        /// instead of the generic `$invoke`: the provider skips its generic step.
        #[arg(long)]
        typed: bool,
        /// Calls in flight at most (closed loop: exactly).
        #[arg(short = 'c', long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        concurrency: u32,
        /// Connections to the provider; the callers are spread over them.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
        connections: u32,
        /// How long to measure (10s, 500ms, 2m; at most 1 hour). Default 10s.
        #[arg(short = 'd', long, value_parser = bench_cmd::parse_duration, conflicts_with = "calls")]
        duration: Option<std::time::Duration>,
        /// How many calls to measure (open loop: calls scheduled, started or missed).
        #[arg(short = 'n', long, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
        calls: Option<u64>,
        /// Open loop: start this many calls per second, whatever the answers; a call
        /// that finds `-c` calls in flight is counted as missed, never queued.
        #[arg(long, value_parser = parse_rate)]
        rate: Option<f64>,
        /// Calls before the measurement, for this long, not counted.
        #[arg(long, value_parser = bench_cmd::parse_duration, default_value = "0s")]
        warmup: std::time::Duration,
        /// Runtime threads of the load generator.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
        threads: u32,
        /// Print one JSON object instead of the summary.
        #[arg(long)]
        json: bool,
        /// Refuse targets whose host is not a loopback address (nothing is sent).
        #[arg(long)]
        loopback_only: bool,
    },
    /// Serve `org.rubbo.bench.EchoService:1.0.0` (`String echo(String)`), the echo
    /// service of `bench/java`, for load tools; prints `READY <protocol> <port>`;
    /// Ctrl-C or SIGTERM stops it.
    BenchServer {
        /// `dubbo` or `tri`.
        #[arg(long, default_value = "dubbo")]
        protocol: String,
        /// Port (0 picks a free one).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Host to bind.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Runtime threads.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
        threads: u32,
    },
    /// Run one QoS command on a Dubbo or Rubbo process's QoS port over HTTP and print
    /// its answer; exit 1 unless it answered 200 (a failed probe answers 503).
    ///
    /// rubbo qos 127.0.0.1:22222 ls; rubbo qos 127.0.0.1:22222 offline 'org.example.*'
    Qos {
        /// The QoS address, HOST:PORT.
        address: String,
        /// The command (ls, ready, online, offline, help...).
        command: String,
        /// Its arguments.
        args: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
enum DecodeFormat {
    /// Hessian 2 values.
    Hessian2 {
        /// A file with the bytes.
        file: Option<String>,
        /// The bytes as hex instead of a file.
        #[arg(long)]
        hex: Option<String>,
    },
    /// Dubbo frames (16-byte header + body), e.g. captured from a socket.
    Dubbo {
        /// A file with the bytes.
        file: Option<String>,
        /// The bytes as hex instead of a file.
        #[arg(long)]
        hex: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Url { url } => url_cmd::run(&url).map(|()| ExitCode::SUCCESS),
        Command::Registry { port, host } => registry_cmd(&host, port),
        Command::Qos {
            address,
            command,
            args,
        } => qos_cmd::run(&address, &command, &args),
        Command::Demo {
            providers,
            calls,
            concurrency,
            loadbalance,
            cluster,
            kill_one,
        } => config_args::loader(&cli.config, &cli.set).and_then(|loader| {
            let mut loader = loader.default_value("dubbo.consumer.timeout", "2000");
            if let Some(lb) = &loadbalance {
                loader = loader.code("dubbo.consumer.loadbalance", lb.as_str());
            }
            if let Some(c) = &cluster {
                loader = loader.code("dubbo.consumer.cluster", c.as_str());
            }
            let config = config_args::resolve(loader)?;
            let consumer = &config.consumer().params;
            demo_cmd::run(&demo_cmd::DemoArgs {
                providers,
                calls,
                concurrency,
                loadbalance: consumer.get("loadbalance").cloned(),
                cluster: consumer.get("cluster").cloned(),
                timeout_ms: consumer.get("timeout").cloned().unwrap_or_default(),
                kill_one,
            })
        }),
        Command::Decode { format } => match format {
            DecodeFormat::Hessian2 { file, hex } => {
                input::read_bytes(file.as_deref(), hex.as_deref())
                    .and_then(|b| decode_cmd::hessian2(&b))
                    .map(|()| ExitCode::SUCCESS)
            }
            DecodeFormat::Dubbo { file, hex } => input::read_bytes(file.as_deref(), hex.as_deref())
                .and_then(|b| decode_cmd::dubbo(&b))
                .map(|()| ExitCode::SUCCESS),
        },
        Command::BenchServer {
            protocol,
            port,
            host,
            threads,
        } => bench_service::run(&protocol, &host, port, threads as usize),
        Command::Bench {
            target,
            method,
            args,
            types,
            typed,
            concurrency,
            connections,
            duration,
            calls,
            rate,
            warmup,
            threads,
            json,
            loopback_only,
        } => config_args::loader(&cli.config, &cli.set)
            .and_then(|l| {
                config_args::resolve(
                    l.default_value("dubbo.application.name", invoke_cmd::APPLICATION)
                        .default_value("dubbo.consumer.timeout", invoke_cmd::DEFAULT_TIMEOUT_MS),
                )
            })
            .and_then(|config| {
                bench_cmd::run(
                    &bench_cmd::BenchArgs {
                        target: &target,
                        method: &method,
                        args: &args,
                        types: types.as_deref(),
                        typed,
                        concurrency: concurrency as usize,
                        connections: connections as usize,
                        duration,
                        calls,
                        rate,
                        warmup,
                        threads: threads as usize,
                        json,
                        loopback_only,
                    },
                    &config,
                )
            }),
        Command::Invoke {
            target,
            method,
            args,
            types,
            registry,
            repeat,
        } => config_args::loader(&cli.config, &cli.set)
            .and_then(|l| {
                let l = l
                    .default_value("dubbo.application.name", invoke_cmd::APPLICATION)
                    .default_value("dubbo.consumer.timeout", invoke_cmd::DEFAULT_TIMEOUT_MS);
                config_args::resolve(match &registry {
                    Some(r) => l.code("dubbo.registry.address", r.as_str()),
                    None => l,
                })
            })
            .and_then(|config| {
                invoke_cmd::run(
                    &invoke_cmd::InvokeArgs {
                        target: &target,
                        method: &method,
                        args: &args,
                        types: types.as_deref(),
                        via_registry: registry.is_some(),
                        repeat,
                    },
                    &config,
                )
            }),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rubbo: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// A `--rate`: calls per second, above 0 and at most a million.
fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r > 0.0 && r <= 1e6 => Ok(r),
        _ => Err(format!(
            "bad rate {s:?}: calls per second, above 0 and at most 1000000"
        )),
    }
}

fn registry_cmd(host: &str, port: u16) -> anyhow::Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let handle = rubbo::dev_registry::DevRegistryServer::serve(host, port).await?;
        let bound = handle.address();
        let port = bound.rsplit(':').next().unwrap_or_default().to_owned();
        input::emit(&format!("READY registry {port}"))?;
        eprintln!("dev registry at {bound} (registry address for providers and consumers)");
        let _ = tokio::signal::ctrl_c().await;
        handle.shutdown().await;
        anyhow::Ok(ExitCode::SUCCESS)
    })
}
