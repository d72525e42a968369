//! Who may run what, as Java's `DefaultAnonymousAccessPermissionChecker` and
//! `ForeignHostPermitHandler` decide it: loopback peers are PRIVATE, whitelisted
//! foreign peers PROTECTED, the others get the anonymous level (PUBLIC by default),
//! and the anonymous allow list lets named commands through whatever the level.

use std::net::IpAddr;

use rubbo_common::Url;
use rubbo_common::keys::{
    self, AcceptForeignIp, AnonymousAccessPermissionLevel, QosCheck, QosEnable, QosPort,
};

/// A command's required level, or a peer's granted one (Java's `PermissionLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PermissionLevel {
    /// Nothing (Java's `NONE`): turns the permission check off and refuses
    /// connections from foreign peers that are not whitelisted.
    None,
    /// Probes and `quit`; the anonymous default.
    Public,
    /// Most commands.
    Protected,
    /// `getConfig`, `getAddress`, `gracefulShutdown`; loopback peers.
    Private,
}

impl PermissionLevel {
    fn rank(self) -> i32 {
        match self {
            PermissionLevel::None => i32::MIN,
            PermissionLevel::Public => 1,
            PermissionLevel::Protected => 2,
            PermissionLevel::Private => 3,
        }
    }

    /// Whether this level reaches `required`.
    pub fn allows(self, required: PermissionLevel) -> bool {
        self.rank() >= required.rank()
    }

    /// Parses a name (any case) or Java's number (`1`, `2`, `3`); anything else is
    /// PUBLIC, as Java's `PermissionLevel.from`.
    pub fn parse(s: &str) -> PermissionLevel {
        let s = s.trim();
        [
            PermissionLevel::None,
            PermissionLevel::Public,
            PermissionLevel::Protected,
            PermissionLevel::Private,
        ]
        .into_iter()
        .find(|l| s.eq_ignore_ascii_case(l.name()) || s == l.rank().to_string())
        .unwrap_or(PermissionLevel::Public)
    }

    /// Java's name (`PUBLIC`...).
    pub fn name(self) -> &'static str {
        match self {
            PermissionLevel::None => "NONE",
            PermissionLevel::Public => "PUBLIC",
            PermissionLevel::Protected => "PROTECTED",
            PermissionLevel::Private => "PRIVATE",
        }
    }
}

/// One whitelist entry: an address, a CIDR range, or an IPv4 pattern with `*` or
/// `a-b` octets (as Java's `NetUtils.matchIpExpression`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum IpPattern {
    Exact(IpAddr),
    Cidr(IpAddr, u8),
    Octets([(u8, u8); 4]),
}

impl IpPattern {
    fn parse(s: &str) -> Option<IpPattern> {
        if let Some((ip, bits)) = s.split_once('/') {
            let ip: IpAddr = ip.trim().parse().ok()?;
            let bits: u8 = bits.trim().parse().ok()?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            return (bits <= max).then_some(IpPattern::Cidr(ip, bits));
        }
        if let Ok(ip) = s.parse() {
            return Some(IpPattern::Exact(ip));
        }
        let parts: Vec<&str> = s.split('.').collect();
        if parts.len() != 4 {
            return None;
        }
        let mut octets = [(0u8, 0u8); 4];
        for (o, p) in octets.iter_mut().zip(parts) {
            *o = match p {
                "*" => (0, 255),
                p => match p.split_once('-') {
                    Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
                    None => {
                        let v = p.parse().ok()?;
                        (v, v)
                    }
                },
            };
        }
        Some(IpPattern::Octets(octets))
    }

    fn matches(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match *self {
            IpPattern::Exact(p) => canonical(p) == ip,
            IpPattern::Cidr(p, bits) => match (canonical(p), ip) {
                (IpAddr::V4(p), IpAddr::V4(ip)) => prefix(&p.octets(), &ip.octets(), bits),
                (IpAddr::V6(p), IpAddr::V6(ip)) => prefix(&p.octets(), &ip.octets(), bits),
                _ => false,
            },
            IpPattern::Octets(o) => match ip {
                IpAddr::V4(ip) => ip
                    .octets()
                    .iter()
                    .zip(o)
                    .all(|(v, (lo, hi))| (lo..=hi).contains(v)),
                IpAddr::V6(_) => false,
            },
        }
    }
}

/// An IPv4-mapped IPv6 address as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn prefix(a: &[u8], b: &[u8], bits: u8) -> bool {
    let full = usize::from(bits / 8);
    let rest = bits % 8;
    if a[..full] != b[..full] {
        return false;
    }
    rest == 0 || {
        let mask = 0xffu8 << (8 - rest);
        a[full] & mask == b[full] & mask
    }
}

/// The QoS settings (Java's `QosConfiguration` and the `qos.*` keys).
#[derive(Debug, Clone)]
pub struct QosConfig {
    /// `qos.enable`.
    pub enable: bool,
    /// `qos.check`: a bind failure fails the application instead of a warning.
    pub check: bool,
    /// `qos.host`: the address to bind; `None` binds every interface, as Java.
    pub host: Option<String>,
    /// `qos.port` (0 picks a free one).
    pub port: u16,
    /// `qos.accept.foreign.ip`.
    pub accept_foreign_ip: bool,
    whitelist: Vec<IpPattern>,
    /// `qos.anonymous.access.permission.level`.
    pub anonymous_level: PermissionLevel,
    /// `qos.anonymous.access.allow.commands`.
    pub anonymous_allow_commands: Vec<String>,
}

impl Default for QosConfig {
    fn default() -> Self {
        QosConfig::from_url(&Url::new("qos", "", 0))
    }
}

impl QosConfig {
    /// Reads the `qos.*` keys of `url`, with Java's defaults.
    pub fn from_url(url: &Url) -> QosConfig {
        let list = |key: &str| -> Vec<String> {
            url.get_param(key)
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        };
        QosConfig {
            enable: url.param::<QosEnable>(),
            check: url.param::<QosCheck>(),
            host: url
                .get_param(keys::QOS_HOST_KEY)
                .filter(|h| !h.trim().is_empty())
                .map(str::to_owned),
            port: url.param::<QosPort>(),
            accept_foreign_ip: url.param::<AcceptForeignIp>(),
            // An entry that is no address, range or pattern is ignored, as Java does.
            whitelist: list(keys::ACCEPT_FOREIGN_IP_WHITELIST_KEY)
                .iter()
                .filter_map(|p| IpPattern::parse(p))
                .collect(),
            anonymous_level: PermissionLevel::parse(
                url.str_param::<AnonymousAccessPermissionLevel>(),
            ),
            anonymous_allow_commands: list(keys::ANONYMOUS_ACCESS_ALLOW_COMMANDS_KEY),
        }
    }

    /// Whether `ip` is in `qos.accept.foreign.ip.whitelist`.
    pub fn whitelisted(&self, ip: IpAddr) -> bool {
        self.whitelist.iter().any(|p| p.matches(ip))
    }

    /// Whether a connection from `peer` is served at all (Java's
    /// `ForeignHostPermitHandler`): refused only when foreign peers are not accepted,
    /// anonymous access is off (`NONE`), and `peer` is neither loopback nor
    /// whitelisted.
    pub fn connection_permitted(&self, peer: IpAddr) -> bool {
        self.accept_foreign_ip
            || self.anonymous_level != PermissionLevel::None
            || canonical(peer).is_loopback()
            || self.whitelisted(peer)
    }

    /// The level a peer gets: PRIVATE on loopback, PROTECTED whitelisted, else the
    /// anonymous level.
    pub fn level_of(&self, peer: Option<IpAddr>) -> PermissionLevel {
        match peer {
            Some(ip) if canonical(ip).is_loopback() => PermissionLevel::Private,
            Some(ip) if self.whitelisted(ip) => PermissionLevel::Protected,
            _ => self.anonymous_level,
        }
    }

    /// Whether `peer` may run `command`, which requires `required` (Java's
    /// `DefaultCommandExecutor` with the default checker: no check at all when the
    /// anonymous level is `NONE`).
    pub fn may_run(&self, peer: Option<IpAddr>, command: &str, required: PermissionLevel) -> bool {
        if self.anonymous_level == PermissionLevel::None {
            return true;
        }
        self.anonymous_allow_commands.iter().any(|c| c == command)
            || self.level_of(peer).allows(required)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(params: &[(&str, &str)]) -> QosConfig {
        QosConfig::from_url(&Url::new("qos", "", 0).with_params(params.iter().copied()))
    }

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn java_defaults() {
        let c = QosConfig::default();
        assert!(c.enable);
        assert!(!c.check);
        assert_eq!(c.port, 22222);
        assert!(!c.accept_foreign_ip);
        assert_eq!(c.anonymous_level, PermissionLevel::Public);
        assert_eq!(c.host, None);
    }

    #[test]
    fn loopback_is_private_foreign_anonymous_whitelisted_protected() {
        let c = config(&[(
            keys::ACCEPT_FOREIGN_IP_WHITELIST_KEY,
            "10.0.0.0/8, 192.168.1.7,172.16.*.1-9, bogus",
        )]);
        assert_eq!(c.level_of(ip("127.0.0.1")), PermissionLevel::Private);
        assert_eq!(c.level_of(ip("::1")), PermissionLevel::Private);
        assert_eq!(c.level_of(ip("::ffff:127.0.0.1")), PermissionLevel::Private);
        assert_eq!(c.level_of(ip("10.1.2.3")), PermissionLevel::Protected);
        assert_eq!(c.level_of(ip("192.168.1.7")), PermissionLevel::Protected);
        assert_eq!(c.level_of(ip("172.16.200.5")), PermissionLevel::Protected);
        assert_eq!(c.level_of(ip("172.16.200.10")), PermissionLevel::Public);
        assert_eq!(c.level_of(ip("192.168.1.8")), PermissionLevel::Public);
        assert_eq!(c.level_of(ip("11.0.0.1")), PermissionLevel::Public);
        assert_eq!(c.level_of(None), PermissionLevel::Public);
    }

    #[test]
    fn cidr_prefixes_that_are_not_whole_bytes() {
        let c = config(&[(keys::ACCEPT_FOREIGN_IP_WHITELIST_KEY, "192.168.0.0/23")]);
        assert!(c.whitelisted("192.168.1.255".parse().unwrap()));
        assert!(!c.whitelisted("192.168.2.0".parse().unwrap()));
    }

    #[test]
    fn levels_gate_commands_and_the_allow_list_opens_them() {
        let c = config(&[(keys::ANONYMOUS_ACCESS_ALLOW_COMMANDS_KEY, "ls, version")]);
        let foreign = ip("8.8.8.8");
        assert!(c.may_run(foreign, "ready", PermissionLevel::Public));
        assert!(!c.may_run(foreign, "online", PermissionLevel::Protected));
        assert!(c.may_run(foreign, "ls", PermissionLevel::Protected));
        assert!(c.may_run(ip("127.0.0.1"), "getConfig", PermissionLevel::Private));

        let protected = config(&[(keys::ANONYMOUS_ACCESS_PERMISSION_LEVEL_KEY, "2")]);
        assert!(protected.may_run(foreign, "online", PermissionLevel::Protected));
        assert!(!protected.may_run(foreign, "getConfig", PermissionLevel::Private));
    }

    #[test]
    fn none_refuses_foreign_connections_and_drops_the_command_check() {
        let c = config(&[
            (keys::ANONYMOUS_ACCESS_PERMISSION_LEVEL_KEY, "none"),
            (keys::ACCEPT_FOREIGN_IP_WHITELIST_KEY, "10.0.0.1"),
        ]);
        assert!(!c.connection_permitted("8.8.8.8".parse().unwrap()));
        assert!(c.connection_permitted("10.0.0.1".parse().unwrap()));
        assert!(c.connection_permitted("127.0.0.1".parse().unwrap()));
        assert!(c.may_run(ip("10.0.0.1"), "getConfig", PermissionLevel::Private));
        // The default (PUBLIC) serves every connection, and checks each command.
        assert!(QosConfig::default().connection_permitted("8.8.8.8".parse().unwrap()));
    }

    #[test]
    fn unknown_level_names_are_public() {
        assert_eq!(PermissionLevel::parse("whatever"), PermissionLevel::Public);
        assert_eq!(PermissionLevel::parse("private"), PermissionLevel::Private);
        assert_eq!(PermissionLevel::parse(" 3 "), PermissionLevel::Private);
    }
}
