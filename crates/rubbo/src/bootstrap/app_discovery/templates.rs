//! From a revision's MetadataInfo to the provider URLs of its instances, as Java's
//! `InstanceAddressURL` shares the instance and the service info.
//!
//! A revision's MetadataInfo is turned once, when fetched, into the provider URL of each
//! service at [`TEMPLATE_HOST`] ([`RevisionServices`]), and only that is cached and
//! shared by every subscription: the MetadataInfo itself (a parameter map and strings
//! per service, about 2 KB per service) is dropped, the URLs' parameter cores are
//! interned with every other URL of the same parameters. Each subscription (one
//! consumer, one interface) keeps, per revision, the templates of the services it
//! takes ([`UrlTemplates`]): clones of the shared URLs. An instance's URL is then the
//! template at the instance's host and port ([`Url::with_address`]): one small
//! allocation per provider URL, with no parse, parameter map or interning lookup per
//! instance.

use std::sync::Arc;

use rubbo_common::{Url, keys};
use rubbo_metadata::{Endpoint, MetadataInfo, ServiceInfo, ServiceInstance};
use rubbo_registry::is_match;

use super::small_map::SmallMap;
use tracing::debug;

/// How many revisions a subscription keeps URL templates for; past that the table is
/// emptied and refilled on demand (revisions come and go with rolling upgrades).
const MAX_TEMPLATE_REVISIONS: usize = 64;

/// The host the templates are built at; each instance's URL replaces it.
const TEMPLATE_HOST: &str = "0.0.0.0";

/// The services of one revision of an application, as provider URLs at
/// [`TEMPLATE_HOST`]: what the consumer keeps of a fetched MetadataInfo.
#[derive(Debug)]
pub(crate) struct RevisionServices {
    services: Vec<ServiceTemplate>,
}

/// One service of a revision.
#[derive(Debug)]
struct ServiceTemplate {
    /// The interface (`ServiceInfo.name`).
    name: Box<str>,
    protocol: Arc<str>,
    /// The service's own port (`ServiceInfo.port`), used when the instance has no
    /// endpoint for the protocol.
    port: Option<u16>,
    url: Url,
}

impl RevisionServices {
    /// The provider URL of each named service of `info`, at [`TEMPLATE_HOST`].
    pub(crate) fn new(info: &MetadataInfo) -> Self {
        let mut services: Vec<ServiceTemplate> = info
            .services
            .values()
            .filter_map(|s| {
                let name = s.name.as_deref()?;
                let protocol = s.protocol.as_deref().unwrap_or(keys::defaults::PROTOCOL);
                let url = service_url(protocol, TEMPLATE_HOST, 0, s, name)?;
                Some(ServiceTemplate {
                    name: name.into(),
                    protocol: protocol.into(),
                    port: u16::try_from(s.port).ok().filter(|p| *p > 0),
                    url,
                })
            })
            .collect();
        services.shrink_to_fit();
        RevisionServices { services }
    }

    /// How many services the revision has (named ones).
    pub(crate) fn len(&self) -> usize {
        self.services.len()
    }
}

/// The provider URL templates of one subscription (its consumer and interface are
/// fixed): per (application, revision), the template of each service of the interface
/// that the consumer takes.
#[derive(Debug, Default)]
pub(crate) struct UrlTemplates {
    /// By application, then revision.
    by_revision: SmallMap<String, SmallMap<String, Vec<Template>>>,
    /// The last `dubbo.endpoints` text parsed, and its endpoints: the instances of a
    /// fleet advertise the same text, so most instances cost a comparison.
    endpoints: Option<(String, Vec<Endpoint>)>,
}

/// One service's provider URL, at [`TEMPLATE_HOST`] (shared with the revision's).
#[derive(Debug)]
struct Template {
    protocol: Arc<str>,
    service_port: Option<u16>,
    url: Url,
}

/// The templates of `revision` for `consumer` and `interface` in `table`, built on
/// first use; a known revision costs two lookups and no allocation.
fn revision_templates<'a>(
    table: &'a mut SmallMap<String, SmallMap<String, Vec<Template>>>,
    app: &str,
    revision: &str,
    services: &RevisionServices,
    consumer: &Url,
    interface: &str,
) -> &'a [Template] {
    let known = table.get(app).is_some_and(|r| r.contains_key(revision));
    if !known {
        // Counted only when a revision is new: a walk of the applications.
        if table.values().map(SmallMap::len).sum::<usize>() >= MAX_TEMPLATE_REVISIONS {
            table.clear();
        }
        let built = service_templates(services, consumer, interface);
        table
            .get_or_insert_with(app.to_owned(), SmallMap::new)
            .insert(revision.to_owned(), built);
    }
    table
        .get(app)
        .and_then(|r| r.get(revision))
        .map_or(&[], Vec::as_slice)
}

/// The template of each service of `services` that the consumer takes.
fn service_templates(
    services: &RevisionServices,
    consumer: &Url,
    interface: &str,
) -> Vec<Template> {
    let wanted = consumer
        .get_param(keys::PROTOCOL_KEY)
        .filter(|p| !p.trim().is_empty());
    services
        .services
        .iter()
        .filter(|s| &*s.name == interface)
        .filter(|s| {
            wanted.is_none_or(|list| list.split(',').map(str::trim).any(|p| p == &*s.protocol))
        })
        // The match does not depend on the address: decided once.
        .filter(|s| is_match(consumer, &s.url))
        .map(|s| Template {
            protocol: s.protocol.clone(),
            service_port: s.port,
            url: s.url.clone(),
        })
        .collect()
}

/// The endpoints `instance` advertises (`dubbo.endpoints`), parsed once per text.
fn instance_endpoints<'a>(
    last: &'a mut Option<(String, Vec<Endpoint>)>,
    instance: &ServiceInstance,
) -> &'a [Endpoint] {
    let text = instance
        .metadata
        .get(keys::ENDPOINTS)
        .map_or("", String::as_str);
    if last.as_ref().is_none_or(|(t, _)| t != text) {
        *last = Some((text.to_owned(), instance.endpoints()));
    }
    last.as_ref().map_or(&[], |(_, e)| e.as_slice())
}

/// The provider URL of service `s` at `host:port`, parsed from its text.
pub(super) fn service_url(
    protocol: &str,
    host: &str,
    port: u16,
    s: &ServiceInfo,
    interface: &str,
) -> Option<Url> {
    let path = s.path.as_deref().unwrap_or(interface);
    let mut url = base_url(protocol, host, port, path)?
        .with_params(s.params.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .with_param(keys::INTERFACE_KEY, interface);
    if let Some(g) = s.group.as_deref().filter(|g| !g.is_empty()) {
        url = url.with_param(keys::GROUP_KEY, g);
    }
    if let Some(v) = s.version.as_deref().filter(|v| !v.is_empty()) {
        url = url.with_param(keys::VERSION_KEY, v);
    }
    Some(url.without_params(&[keys::CATEGORY_KEY]))
}

/// `{protocol}://{host}:{port}/{path}` parsed, without parameters; `None` (logged)
/// for an address that does not parse.
fn base_url(protocol: &str, host: &str, port: u16, path: &str) -> Option<Url> {
    match Url::parse(&format!("{protocol}://{host}:{port}/{path}")) {
        Ok(url) => Some(url),
        Err(_) => {
            debug!(host, port, "bad address skipped");
            None
        }
    }
}

/// The template `t` at `host:port` parsed from its text, as [`service_url`] builds it:
/// for a host that does not read back as itself.
fn parsed_at(t: &Template, host: &str, port: u16) -> Option<Url> {
    let path = t.url.path().unwrap_or_default();
    Some(base_url(&t.protocol, host, port, path)?.with_params(t.url.params().iter()))
}

/// Whether `host` reads back as itself in `{protocol}://{host}:{port}/`, so that the
/// URL parsed from that text is the template at that address (an IPv6 or otherwise
/// unusual host takes the parse instead).
fn is_plain_host(host: &str) -> bool {
    !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// The provider URLs of `instance` (of revision `revision`, whose services are
/// `services`) for `consumer`: each service of `interface` matching the consumer's
/// group, version and (when given) protocol, at the instance host and the port of the
/// service's protocol. `templates` is the subscription's (one per consumer and
/// interface): the URLs of a revision are chosen once and each instance's derived from
/// them by address.
pub(crate) fn provider_urls(
    instance: &ServiceInstance,
    revision: &str,
    services: &RevisionServices,
    consumer: &Url,
    interface: &str,
    templates: &mut UrlTemplates,
) -> Vec<Url> {
    let UrlTemplates {
        by_revision,
        endpoints,
    } = templates;
    let list = revision_templates(
        by_revision,
        &instance.service_name,
        revision,
        services,
        consumer,
        interface,
    );
    if list.is_empty() {
        return Vec::new();
    }
    let endpoints = instance_endpoints(endpoints, instance);
    let plain = is_plain_host(&instance.host);
    list.iter()
        .filter_map(|t| {
            let port = endpoints
                .iter()
                .find(|e| *e.protocol == *t.protocol)
                .map(|e| e.port)
                .or(t.service_port)
                .unwrap_or(instance.port);
            if plain {
                return Some(t.url.with_address(&instance.host, port));
            }
            parsed_at(t, &instance.host, port)
        })
        .collect()
}
