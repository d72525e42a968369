//! The commands: their names, summaries and required levels (Java's `@Cmd`), and
//! [`Qos::execute`], which checks the peer's permission (Java's
//! `DefaultCommandExecutor`) and runs one.

mod info;
mod ops;
mod services;
#[cfg(test)]
mod tests;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use tracing::{debug, info};

pub use ops::Session;

use crate::permission::{PermissionLevel, QosConfig};
use crate::{LogLevelSwitch, QosError, QosHost};

/// What Java's telnet `quit` answers; the telnet session ends with `BYE!`.
pub(crate) const CLOSE: &str = "close!";

/// How long a telnet session may stay silent (Java's `IdleStateHandler(0, 0, 5 * 60)`).
pub const TELNET_IDLE: Duration = Duration::from_secs(5 * 60);

/// One command, as Java's `@Cmd` describes it.
#[derive(Debug, Clone, Copy)]
pub struct CommandSpec {
    /// The name typed or put in the path.
    pub name: &'static str,
    /// The line `help` shows.
    pub summary: &'static str,
    /// The examples `help <name>` shows.
    pub example: &'static [&'static str],
    /// The level a peer needs.
    pub level: PermissionLevel,
}

const fn spec(
    name: &'static str,
    summary: &'static str,
    example: &'static [&'static str],
    level: PermissionLevel,
) -> CommandSpec {
    CommandSpec {
        name,
        summary,
        example,
        level,
    }
}

use PermissionLevel::{Private, Protected, Public};

/// Every command, in the order `help` lists them; summaries and examples are Java's.
pub const COMMANDS: &[CommandSpec] = &[
    spec("help", "help command", &["help", "help online"], Protected),
    spec("ls", "ls service", &["ls"], Protected),
    spec(
        "ps",
        "Print server ports and connections.",
        &["ps -l [port]", "ps", "ps -l", "ps -l 20880"],
        Protected,
    ),
    spec(
        "online",
        "online app addresses",
        &["online dubbo", "online xx.xx.xxx.service"],
        Protected,
    ),
    spec(
        "offline",
        "offline dubbo",
        &["offline dubbo", "offline xx.xx.xxx.service"],
        Protected,
    ),
    spec(
        "onlineApp",
        "online app addresses",
        &["onlineApp", "onlineApp xx.xx.xxx.service"],
        Protected,
    ),
    spec(
        "offlineApp",
        "offline app addresses",
        &["offlineApp", "offlineApp xx.xx.xxx.service"],
        Protected,
    ),
    spec(
        "onlineInterface",
        "online dubbo",
        &["onlineInterface dubbo", "onlineInterface xx.xx.xxx.service"],
        Protected,
    ),
    spec(
        "offlineInterface",
        "offline dubbo",
        &[
            "offlineInterface dubbo",
            "offlineInterface xx.xx.xxx.service",
        ],
        Protected,
    ),
    spec("ready", "Judge if service is ready to work? ", &[], Public),
    spec("live", "Judge if service is alive? ", &[], Public),
    spec("startup", "Judge if service has started? ", &[], Public),
    spec(
        "version",
        "version command(show dubbo version)",
        &["version"],
        Protected,
    ),
    spec(
        "getConfig",
        "Get current running config.",
        &[
            "getConfig ReferenceConfig com.example.DemoService",
            "getConfig ApplicationConfig",
        ],
        Private,
    ),
    spec(
        "getAddress",
        "Get service available address ",
        &[
            "getAddress com.example.DemoService",
            "getAddress group/com.example.DemoService",
        ],
        Private,
    ),
    spec("quit", "quit telnet console", &[], Public),
    spec(
        "shutdown",
        "Shutdown Dubbo Application.",
        &["shutdown -t <milliseconds>"],
        Protected,
    ),
    spec(
        "gracefulShutdown",
        "Gracefully shutdown servers",
        &["gracefulShutdown"],
        Private,
    ),
    spec("metrics", "reuse qos report", &[], Protected),
    spec(
        "count",
        "Count the service.",
        &["count [service] [method] [times]"],
        Protected,
    ),
    spec(
        "invoke",
        "Invoke the service method.",
        &["invoke IHelloService.sayHello(\"xxxx\")"],
        Protected,
    ),
    spec(
        "select",
        "Select the index of the method you want to invoke",
        &["select [index]"],
        Protected,
    ),
    spec(
        "switchLogLevel",
        "Switch log level",
        &["switchLogLevel info"],
        Protected,
    ),
    spec(
        "getRouterSnapshot",
        "Get State Router Snapshot.",
        &["getRouterSnapshot xx.xx.xxx.service"],
        Protected,
    ),
    spec(
        "getEnabledRouterSnapshot",
        "Get enabled Dubbo invocation level router snapshot print service list",
        &[],
        Protected,
    ),
    spec(
        "enableRouterSnapshot",
        "Enable Dubbo Invocation Level Router Snapshot Print",
        &["enableRouterSnapshot xx.xx.xxx.service"],
        Protected,
    ),
    spec(
        "disableRouterSnapshot",
        "Disable Dubbo Invocation Level Router Snapshot Print",
        &["disableRouterSnapshot xx.xx.xxx.service"],
        Protected,
    ),
    spec(
        "getRecentRouterSnapshot",
        "Get recent (32) router snapshot message",
        &[],
        Protected,
    ),
];

/// What `metrics application_all` names: every application's metrics, as JSON.
pub const ALL_APPLICATIONS: &str = "application_all";

/// `metrics [app]` (Java's `PrometheusMetricsReporterCmd`): the Prometheus text of
/// the application, or of the one named; `application_all` gives every application's
/// as a JSON object by name.
fn metrics(host: &dyn QosHost, app: Option<&str>) -> String {
    let text = host.metrics().unwrap_or_default();
    match app {
        None => text,
        Some(ALL_APPLICATIONS) => serde_json::json!({ host.application(): text }).to_string(),
        Some(name) if name == host.application() => text,
        Some(name) => format!("Not exist application: {name}"),
    }
}

/// The command named `name`.
pub fn command(name: &str) -> Option<&'static CommandSpec> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// Where a command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandContext {
    /// Over HTTP (`getConfig` and `getAddress` answer JSON), else telnet.
    pub http: bool,
    /// The peer's address, for the permission check; `None` is anonymous.
    pub peer: Option<IpAddr>,
}

/// A command's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status (200; 503 for a failed probe).
    pub status: u16,
    /// The text.
    pub body: String,
}

impl Reply {
    fn ok(body: impl Into<String>) -> Self {
        Reply {
            status: 200,
            body: body.into(),
        }
    }
}

/// What running a command came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It ran.
    Done(Reply),
    /// No such command (HTTP 404, telnet `:no such command`).
    NotFound,
    /// The peer's level is too low (HTTP 403, telnet `:permission deny`).
    Forbidden,
    /// It failed (HTTP 500 with the text, telnet `:fail to execute commandContext by`).
    Failed(String),
}

/// The command executor: a host, and the settings that decide who may run what.
#[derive(Debug, Clone)]
pub struct Qos {
    host: Arc<dyn QosHost>,
    config: Arc<QosConfig>,
    log_levels: Option<crate::log_level::Registered>,
    /// A telnet session with no input for this long is closed (Java: 5 minutes).
    pub(crate) idle: Duration,
}

impl Qos {
    /// Commands over `host`, permissions from `config`.
    pub fn new(host: Arc<dyn QosHost>, config: QosConfig) -> Self {
        Qos {
            host,
            config: Arc::new(config),
            log_levels: None,
            idle: TELNET_IDLE,
        }
    }

    /// Lets `switchLogLevel` change the application's log level through `levels`
    /// (a `tracing_subscriber::reload` handle); without one, the command says it
    /// cannot.
    pub fn with_log_levels(mut self, levels: Arc<dyn LogLevelSwitch>) -> Self {
        self.log_levels = Some(crate::log_level::Registered(levels));
        self
    }

    /// Closes telnet sessions idle for `idle` instead of Java's 5 minutes.
    pub fn with_idle_timeout(mut self, idle: Duration) -> Self {
        self.idle = idle;
        self
    }

    /// The settings.
    pub fn config(&self) -> &QosConfig {
        &self.config
    }

    /// Runs command `name` with `args` for a peer, outside any session (as an HTTP
    /// request does: `select` has no `invoke` to follow).
    pub async fn execute(&self, name: &str, args: &[String], ctx: CommandContext) -> Outcome {
        self.execute_in(name, args, ctx, None).await
    }

    /// Runs command `name` in a telnet session, whose state (`invoke`'s overloads
    /// for `select`) carries from one command to the next.
    pub async fn execute_in(
        &self,
        name: &str,
        args: &[String],
        ctx: CommandContext,
        session: Option<&Session>,
    ) -> Outcome {
        let peer = ctx
            .peer
            .map_or_else(|| "unknown".to_owned(), |p| p.to_string());
        info!(command = name, ?args, peer, "qos command");
        let Some(spec) = command(name) else {
            debug!(command = name, peer, "qos command not found");
            return Outcome::NotFound;
        };
        if name == "metrics" && !self.host.has_metrics() {
            debug!(command = name, peer, "qos metrics asked with metrics off");
            return Outcome::NotFound;
        }
        if !self.config.may_run(ctx.peer, name, spec.level) {
            info!(
                command = name,
                required = spec.level.name(),
                peer,
                "qos command denied"
            );
            return Outcome::Forbidden;
        }
        match self.run(spec, args, ctx, session).await {
            Ok(reply) => Outcome::Done(reply),
            Err(e) => {
                info!(command = name, peer, error = %e, "qos command failed");
                Outcome::Failed(e.to_string())
            }
        }
    }

    async fn run(
        &self,
        spec: &CommandSpec,
        args: &[String],
        ctx: CommandContext,
        session: Option<&Session>,
    ) -> Result<Reply, QosError> {
        use crate::host::RegistryScope::{All, Application, Interface};
        let host = &*self.host;
        let first = args.first().map(String::as_str);
        Ok(match spec.name {
            "help" => Reply::ok(info::help(first)),
            "ls" => Reply::ok(services::ls(host)),
            "ps" => Reply::ok(services::ps(host, args)),
            "online" => Reply::ok(services::set(host, first, All, true).await?),
            "offline" => Reply::ok(services::set(host, first, All, false).await?),
            "onlineApp" => Reply::ok(services::set(host, first, Application, true).await?),
            "offlineApp" => Reply::ok(services::set(host, first, Application, false).await?),
            "onlineInterface" => Reply::ok(services::set(host, first, Interface, true).await?),
            "offlineInterface" => Reply::ok(services::set(host, first, Interface, false).await?),
            "ready" => info::probe(info::ready(host)),
            "live" => info::probe(host.live()),
            "startup" => info::probe(host.started()),
            "version" => Reply::ok(format!("dubbo version \"{}\"", host.version())),
            "getConfig" => Reply::ok(info::get_config(host, args, ctx.http)),
            "getAddress" => Reply::ok(services::get_address(host, args, ctx.http)),
            "quit" => Reply::ok(CLOSE),
            "shutdown" => Reply::ok(info::shutdown(host, args).await),
            "gracefulShutdown" => {
                services::set(host, None, All, false).await?;
                Reply::ok("OK")
            }
            "metrics" => Reply::ok(metrics(host, first)),
            "count" => Reply::ok(ops::count(host, args)),
            "invoke" => Reply::ok(ops::invoke(host, args, session).await),
            "select" => Reply::ok(ops::select(host, args, session).await),
            "switchLogLevel" => Reply::ok(ops::switch_log_level(
                self.log_levels.as_ref().map(|l| &*l.0),
                args,
            )),
            "getRouterSnapshot"
            | "getEnabledRouterSnapshot"
            | "enableRouterSnapshot"
            | "disableRouterSnapshot"
            | "getRecentRouterSnapshot" => Reply::ok(ops::router_snapshot(host, spec.name, args)?),
            other => return Err(QosError::command(format!("{other} is not implemented"))),
        })
    }
}
