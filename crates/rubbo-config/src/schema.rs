//! The keys Java knows: sections, their attributes, and each attribute's type.

/// Which kind of section a key belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Application,
    Registry,
    Protocol,
    Provider,
    Consumer,
    Service,
    Reference,
    Method,
    ConfigCenter,
    MetadataReport,
    Ssl,
}

/// A key split into its section and attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub(crate) kind: Kind,
    /// The id (registries, protocols) or interface (services, references); `""` for
    /// the single sections and for `dubbo.registry` / `dubbo.protocol`.
    pub(crate) id: String,
    /// For [`Kind::Method`]: the method, and whether it is a service's (else a
    /// reference's).
    pub(crate) method: Option<(String, bool)>,
    /// The attribute in kebab case, or `parameters.<key>`.
    pub(crate) attr: String,
}

const APPLICATION: &[&str] = &[
    "name",
    "version",
    "owner",
    "organization",
    "architecture",
    "environment",
    "compiler",
    "logger",
    "register-consumer",
    "qos-enable",
    "qos-host",
    "qos-port",
    "qos-check",
    "qos-accept-foreign-ip",
    "qos-accept-foreign-ip-whitelist",
    "qos-anonymous-access-permission-level",
    "qos-anonymous-allow-commands",
    "shutwait",
    "metadata-type",
    "register-mode",
    "enable-empty-protection",
    "protocol",
    "metadata-service-port",
    "metadata-service-protocol",
    "only-use-metadata-v2",
    "liveness-probe",
    "readiness-probe",
    "startup-probe",
    "executor-management-mode",
    "enable-file-cache",
    "serialize-check-status",
    "check-serializable",
    "auto-trust-serialize-class",
    "trust-serialize-class-level",
    "monitor",
    "id",
    "default",
];

/// `dubbo.application` attributes whose names hold a dot: the consumer's migration
/// step (`service-discovery.migration`, or `migration.step`), threshold, and the
/// wait before the local migration rule file applies.
const APPLICATION_DOTTED: &[&str] = &[
    "service-discovery.migration",
    "migration.step",
    "migration.threshold",
    "migration.delay",
];

const REGISTRY: &[&str] = &[
    "id",
    "address",
    "protocol",
    "port",
    "username",
    "password",
    "transporter",
    "server",
    "client",
    "cluster",
    "zone",
    "group",
    "version",
    "timeout",
    "session",
    "file",
    "wait",
    "check",
    "dynamic",
    "register",
    "subscribe",
    "simplified",
    "extra-keys",
    "use-as-config-center",
    "use-as-metadata-center",
    "accepts",
    "preferred",
    "weight",
    "register-mode",
    "enable-empty-protection",
    "default",
    "secure",
];

const PROTOCOL: &[&str] = &[
    "id",
    "name",
    "host",
    "port",
    "contextpath",
    "threadpool",
    "threadname",
    "corethreads",
    "threads",
    "iothreads",
    "alive",
    "queues",
    "accepts",
    "codec",
    "serialization",
    "prefer-serialization",
    "charset",
    "payload",
    "buffer",
    "heartbeat",
    "accesslog",
    "transporter",
    "exchanger",
    "dispatcher",
    "dispatch",
    "networker",
    "server",
    "client",
    "telnet",
    "prompt",
    "status",
    "register",
    "keep-alive",
    "optimizer",
    "extension",
    "default",
    "ssl-enabled",
    "ext-protocol",
    "json-check-level",
    "preferred-protocol",
];

/// `AbstractInterfaceConfig` and `AbstractMethodConfig`: shared by provider, consumer,
/// services and references.
const INTERFACE: &[&str] = &[
    "id",
    "default",
    "interface",
    "timeout",
    "retries",
    "actives",
    "loadbalance",
    "async",
    "sent",
    "mock",
    "merger",
    "cache",
    "validation",
    "forks",
    "version",
    "group",
    "deprecated",
    "delay",
    "export",
    "weight",
    "document",
    "dynamic",
    "token",
    "accesslog",
    "executes",
    "register",
    "warmup",
    "serialization",
    "prefer-serialization",
    "filter",
    "listener",
    "cluster",
    "check",
    "init",
    "generic",
    "lazy",
    "reconnect",
    "sticky",
    "stub",
    "proxy",
    "connections",
    "owner",
    "layer",
    "onconnect",
    "ondisconnect",
    "local",
    "scope",
    "tag",
    "protocol",
    "registry",
    "registry-ids",
    "provided-by",
    "provider-port",
    "provider-namespace",
    "url",
    "client",
    "router",
    "share-connections",
    "shareconnections",
    "tps",
    "injvm",
    "auth",
    "param-sign",
];

/// Provider and consumer only (`ProviderConfig`, `ConsumerConfig`).
const DEFAULTS: &[&str] = &[
    "host",
    "port",
    "contextpath",
    "threadpool",
    "threadname",
    "threads",
    "corethreads",
    "iothreads",
    "alive",
    "queues",
    "accepts",
    "codec",
    "charset",
    "payload",
    "buffer",
    "transporter",
    "exchanger",
    "dispatcher",
    "networker",
    "server",
    "telnet",
    "prompt",
    "status",
    "wait",
    "export-async",
    "export-background",
    "url-merge-processor",
    "refer-async",
    "refer-background",
    "refer-thread-num",
    "export-thread-num",
];

const METHOD: &[&str] = &[
    "name",
    "timeout",
    "retries",
    "actives",
    "loadbalance",
    "async",
    "sent",
    "mock",
    "merger",
    "cache",
    "validation",
    "forks",
    "executes",
    "deprecated",
    "sticky",
    "return",
    "oninvoke",
    "onreturn",
    "onthrow",
    "stat",
    "reliable",
    "retry",
    "tps",
];

const CONFIG_CENTER: &[&str] = &[
    "id",
    "default",
    "address",
    "protocol",
    "port",
    "cluster",
    "namespace",
    "group",
    "username",
    "password",
    "timeout",
    "highest-priority",
    "check",
    "config-file",
    "app-config-file",
    "include-spring-env",
    "file",
    "app-group",
];

const METADATA_REPORT: &[&str] = &[
    "id",
    "default",
    "address",
    "protocol",
    "port",
    "username",
    "password",
    "timeout",
    "group",
    "namespace",
    "cycle-report",
    "retry-times",
    "retry-period",
    "sync-report",
    "cluster",
    "registry",
    "file",
    "check",
    "report-metadata",
    "report-definition",
    "report-consumer-definition",
];

/// `dubbo.ssl` attributes (Java's `SslConfig`).
const SSL: &[&str] = &[
    "id",
    "server-key-cert-chain-path",
    "server-private-key-path",
    "server-key-password",
    "server-trust-cert-collection-path",
    "client-key-cert-chain-path",
    "client-private-key-path",
    "client-key-password",
    "client-trust-cert-collection-path",
    "ca-address",
    "env-type",
    "ca-cert-path",
    "oidc-token-path",
];

/// The attributes of a section kind.
pub(crate) fn attributes(kind: Kind) -> Vec<&'static str> {
    match kind {
        Kind::Application => APPLICATION.to_vec(),
        Kind::Registry => REGISTRY.to_vec(),
        Kind::Protocol => PROTOCOL.to_vec(),
        Kind::Provider | Kind::Consumer => [INTERFACE, DEFAULTS].concat(),
        Kind::Service | Kind::Reference => INTERFACE.to_vec(),
        Kind::Method => METHOD.to_vec(),
        Kind::ConfigCenter => CONFIG_CENTER.to_vec(),
        Kind::MetadataReport => METADATA_REPORT.to_vec(),
        Kind::Ssl => SSL.to_vec(),
    }
}

/// Sections Java knows that the application reads itself from the tree
/// ([`Config::get`](crate::Config::get)), so they are neither typed here nor warned
/// about: `dubbo.metrics.*` and `dubbo.tracing.*`, read by the bootstrap.
pub(crate) const OWNED_ELSEWHERE: &[&str] = &[
    "dubbo.metrics.",
    "dubbo.tracing.",
    // Java's local migration rule file (`dubbo.migration.file`,
    // `dubbo.migration-file.enable`), read by the consumer.
    "dubbo.migration.",
    "dubbo.migration-file.",
];

/// The single sections (no id), with their key prefixes: the environment is
/// consulted for each of their attributes.
pub(crate) const SINGLE: &[(&str, Kind)] = &[
    ("dubbo.application", Kind::Application),
    ("dubbo.registry", Kind::Registry),
    ("dubbo.protocol", Kind::Protocol),
    ("dubbo.provider", Kind::Provider),
    ("dubbo.consumer", Kind::Consumer),
    ("dubbo.config-center", Kind::ConfigCenter),
    ("dubbo.metadata-report", Kind::MetadataReport),
    ("dubbo.ssl", Kind::Ssl),
];

/// What an attribute's value must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Type {
    Str,
    Int,
    Bool,
    Port,
}

impl Type {
    pub(crate) fn of(attr: &str) -> Type {
        match attr {
            "port" | "qos-port" | "metadata-service-port" | "provider-port" => Type::Port,
            "timeout" | "retries" | "actives" | "weight" | "executes" | "connections" | "delay"
            | "warmup" | "threads" | "corethreads" | "iothreads" | "queues" | "accepts"
            | "payload" | "buffer" | "heartbeat" | "forks" | "session" | "wait" | "alive"
            | "tps" | "retry-times" | "retry-period" => Type::Int,
            "check"
            | "lazy"
            | "sticky"
            | "async"
            | "sent"
            | "register"
            | "subscribe"
            | "dynamic"
            | "deprecated"
            | "export"
            | "qos-enable"
            | "qos-accept-foreign-ip"
            | "qos-check"
            | "default"
            | "simplified"
            | "use-as-config-center"
            | "use-as-metadata-center"
            | "enable-empty-protection"
            | "ssl-enabled"
            | "register-consumer"
            | "highest-priority"
            | "include-spring-env"
            | "sync-report"
            | "cycle-report"
            | "injvm"
            | "init"
            | "keep-alive"
            | "return"
            | "export-async"
            | "refer-async"
            | "only-use-metadata-v2" => Type::Bool,
            _ => Type::Str,
        }
    }

    /// Checks `value`; on error, what was expected.
    pub(crate) fn check(self, value: &str) -> Result<(), &'static str> {
        let v = value.trim();
        let ok = match self {
            Type::Str => true,
            Type::Int => v.parse::<i64>().is_ok(),
            Type::Bool => v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("false"),
            Type::Port => v == "-1" || v.parse::<u16>().is_ok(),
        };
        if ok {
            Ok(())
        } else {
            Err(match self {
                Type::Str => "a string",
                Type::Int => "an integer",
                Type::Bool => "true or false",
                Type::Port => "a port number (0-65535, or -1 for the default)",
            })
        }
    }
}

/// `qosPort` → `qos-port` (Java accepts both spellings).
pub(crate) fn kebab(attr: &str) -> String {
    let mut out = String::with_capacity(attr.len() + 4);
    for c in attr.chars() {
        if c.is_ascii_uppercase() {
            out.push('-');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The URL parameter an attribute becomes (Java's `appendParameters`: camel case to
/// dotted), or `None` for attributes that are not URL parameters (ids, the service
/// key's version and group, references to other configs).
pub(crate) fn url_key(attr: &str) -> Option<String> {
    if let Some(raw) = attr.strip_prefix("parameters.") {
        return Some(raw.to_owned());
    }
    match attr {
        "id" | "default" | "interface" | "name" | "version" | "group" | "registry"
        | "registry-ids" | "protocol" | "url" | "host" | "port" | "scope" | "export-async"
        | "export-background" | "refer-async" | "refer-background" | "refer-thread-num"
        | "export-thread-num" => None,
        "provided-by" | "provider-port" | "provider-namespace" => Some(attr.to_owned()),
        "share-connections" => Some("shareconnections".to_owned()),
        _ => Some(attr.replace('-', ".")),
    }
}

fn known(kind: Kind, attr: &str) -> bool {
    attr.starts_with("parameters.") && attr.len() > "parameters.".len()
        || attributes(kind).contains(&attr)
}

/// Splits `rest` (after a section prefix) into `(head, attr)`: `parameters.<key>`
/// keeps its dots, otherwise the attribute is the last segment.
fn split_attr(rest: &str) -> (&str, String) {
    if let Some(pos) = rest.find(".parameters.") {
        return (&rest[..pos], rest[pos + 1..].to_owned());
    }
    if let Some(p) = rest.strip_prefix("parameters.") {
        return ("", format!("parameters.{p}"));
    }
    match rest.rfind('.') {
        Some(pos) => (&rest[..pos], kebab(&rest[pos + 1..])),
        None => ("", kebab(rest)),
    }
}

fn starts_upper(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_uppercase())
}

fn starts_lower(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_lowercase())
}

/// Parses a key under `dubbo.`; `None` when Java does not know it.
pub(crate) fn parse(key: &str) -> Option<Parsed> {
    let rest = key.strip_prefix("dubbo.")?;
    let (section, rest) = rest.split_once('.')?;
    let single = |kind| {
        if kind == Kind::Application && APPLICATION_DOTTED.contains(&rest) {
            return Some(Parsed {
                kind,
                id: String::new(),
                method: None,
                attr: rest.to_owned(),
            });
        }
        let (head, attr) = split_attr(rest);
        (head.is_empty() && known(kind, &attr)).then(|| Parsed {
            kind,
            id: String::new(),
            method: None,
            attr,
        })
    };
    let with_id = |kind| {
        let (id, rest) = rest.split_once('.')?;
        let (head, attr) = split_attr(rest);
        (head.is_empty() && !id.is_empty() && known(kind, &attr)).then(|| Parsed {
            kind,
            id: id.to_owned(),
            method: None,
            attr,
        })
    };
    match section {
        "application" => single(Kind::Application),
        "registry" => single(Kind::Registry),
        "protocol" => single(Kind::Protocol),
        "provider" => single(Kind::Provider),
        "consumer" => single(Kind::Consumer),
        "config-center" | "configCenter" => single(Kind::ConfigCenter),
        "metadata-report" | "metadataReport" => single(Kind::MetadataReport),
        "ssl" => single(Kind::Ssl),
        "registries" => with_id(Kind::Registry),
        "protocols" => with_id(Kind::Protocol),
        "services" | "references" => {
            let service = section == "services";
            let kind = if service {
                Kind::Service
            } else {
                Kind::Reference
            };
            if let Some((iface, m)) = rest.split_once(".methods.") {
                let (method, attr) = split_attr(m);
                return (!iface.is_empty()
                    && !method.is_empty()
                    && !method.contains('.')
                    && known(Kind::Method, &attr))
                .then(|| Parsed {
                    kind: Kind::Method,
                    id: iface.to_owned(),
                    method: Some((method.to_owned(), service)),
                    attr,
                });
            }
            let (iface, attr) = split_attr(rest);
            (!iface.is_empty() && known(kind, &attr)).then(|| Parsed {
                kind,
                id: iface.to_owned(),
                method: None,
                attr,
            })
        }
        "service" | "reference" => {
            // Java's prefixes: `dubbo.service.{interface}`, and for a method
            // `dubbo.reference.{interface}.{method}`: a lower-case segment after an
            // upper-case one (Java's naming convention) is the method.
            let service = section == "service";
            let kind = if service {
                Kind::Service
            } else {
                Kind::Reference
            };
            let (head, attr) = split_attr(rest);
            if let Some((iface, method)) = head.rsplit_once('.') {
                let simple = iface.rsplit('.').next().unwrap_or(iface);
                if starts_lower(method) && starts_upper(simple) {
                    return known(Kind::Method, &attr).then(|| Parsed {
                        kind: Kind::Method,
                        id: iface.to_owned(),
                        method: Some((method.to_owned(), service)),
                        attr,
                    });
                }
            }
            (!head.is_empty() && known(kind, &attr)).then(|| Parsed {
                kind,
                id: head.to_owned(),
                method: None,
                attr,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_layout() {
        let p = parse("dubbo.application.service-discovery.migration").unwrap();
        assert_eq!(
            (p.kind, p.attr.as_str()),
            (Kind::Application, "service-discovery.migration")
        );
        let p = parse("dubbo.application.qosPort").unwrap();
        assert_eq!((p.kind, p.attr.as_str()), (Kind::Application, "qos-port"));
        let p = parse("dubbo.registries.r1.address").unwrap();
        assert_eq!((p.kind, p.id.as_str()), (Kind::Registry, "r1"));
        let p = parse("dubbo.services.org.example.Greeter.timeout").unwrap();
        assert_eq!(
            (p.kind, p.id.as_str()),
            (Kind::Service, "org.example.Greeter")
        );
        let p = parse("dubbo.references.org.example.Greeter.methods.hello.retries").unwrap();
        assert_eq!(p.method, Some(("hello".into(), false)));
        assert_eq!(
            (p.id.as_str(), p.attr.as_str()),
            ("org.example.Greeter", "retries")
        );
        let p = parse("dubbo.reference.org.example.Greeter.hello.timeout").unwrap();
        assert_eq!(
            (p.kind, p.id.as_str()),
            (Kind::Method, "org.example.Greeter")
        );
        let p = parse("dubbo.reference.org.example.Greeter.check").unwrap();
        assert_eq!(
            (p.kind, p.id.as_str()),
            (Kind::Reference, "org.example.Greeter")
        );
        let p = parse("dubbo.consumer.parameters.heartbeat.timeout").unwrap();
        assert_eq!(p.attr, "parameters.heartbeat.timeout");
        assert_eq!(url_key(&p.attr).as_deref(), Some("heartbeat.timeout"));
        assert!(parse("dubbo.application.nmae").is_none());
        assert!(parse("dubbo.bogus.x").is_none());
        assert!(parse("dubbo.protocol").is_none());
    }

    #[test]
    fn types() {
        assert!(Type::of("port").check("abc").is_err());
        assert!(Type::of("port").check("70000").is_err());
        assert!(Type::of("port").check("-1").is_ok());
        assert!(Type::of("check").check("False").is_ok());
        assert!(Type::of("check").check("yes").is_err());
        assert!(Type::of("timeout").check(" 250 ").is_ok());
        assert!(Type::of("loadbalance").check("anything").is_ok());
    }
}
