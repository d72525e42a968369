//! Provider URLs derived from per-revision templates are the URLs parsed from their
//! text, as the consumer built them before templates: same string, equal, same hash.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::hash::BuildHasher;

use rubbo_common::{Url, keys};
use rubbo_metadata::{Endpoint, MetadataInfo, ServiceInfo, ServiceInstance};
use rubbo_registry::is_match;

use super::templates::{RevisionServices, UrlTemplates, provider_urls, service_url};

const IFACE: &str = "org.rubbo.test.Greeter";

/// The provider URLs of `instance` as the consumer built them before templates: each
/// one parsed from `{protocol}://{host}:{port}/{path}` plus the service's parameters.
fn parsed_urls(
    instance: &ServiceInstance,
    info: &MetadataInfo,
    consumer: &Url,
    interface: &str,
) -> Vec<Url> {
    let wanted: Option<Vec<&str>> = consumer
        .get_param(keys::PROTOCOL_KEY)
        .filter(|p| !p.trim().is_empty())
        .map(|p| p.split(',').map(str::trim).collect());
    let endpoints = instance.endpoints();
    let mut out = Vec::new();
    for s in info.services.values() {
        if s.name.as_deref() != Some(interface) {
            continue;
        }
        let protocol = s.protocol.as_deref().unwrap_or(keys::defaults::PROTOCOL);
        if wanted.as_ref().is_some_and(|w| !w.contains(&protocol)) {
            continue;
        }
        let port = endpoints
            .iter()
            .find(|e| e.protocol == protocol)
            .map(|e| e.port)
            .or_else(|| u16::try_from(s.port).ok().filter(|p| *p > 0))
            .unwrap_or(instance.port);
        let Some(url) = service_url(protocol, &instance.host, port, s, interface) else {
            continue;
        };
        if is_match(consumer, &url) {
            out.push(url);
        }
    }
    out
}

fn service(url: &str) -> ServiceInfo {
    ServiceInfo::from_url(&Url::parse(url).unwrap())
}

/// An application serving `IFACE` on dubbo (two groups, one with method parameters and
/// a `category` to drop), on Triple (its own path) and another interface.
fn info(app: &str, extra: &str) -> MetadataInfo {
    let mut info = MetadataInfo::new(app);
    for url in [
        format!(
            "dubbo://10.0.0.1:20880/{IFACE}?interface={IFACE}&version=1.0.0&group=g1&application={app}&side=provider&methods=hello,bye&hello.timeout=250&retries=0&category=providers&x={extra}"
        ),
        format!(
            "dubbo://10.0.0.1:20880/{IFACE}?interface={IFACE}&version=1.0.0&group=g2&application={app}&side=provider&weight=50"
        ),
        format!(
            "tri://10.0.0.1:50051/greeter/v1?interface={IFACE}&version=1.0.0&group=g1&application={app}&side=provider&serialization=protobuf"
        ),
        format!(
            "dubbo://10.0.0.1:20880/org.rubbo.test.Other?interface=org.rubbo.test.Other&application={app}"
        ),
    ] {
        info.add_service(service(&url));
    }
    info
}

fn instance(app: &str, host: &str, port: u16, endpoints: &[(&str, u16)]) -> ServiceInstance {
    let mut i = ServiceInstance::new(app, host, port);
    i.set_endpoints(
        &endpoints
            .iter()
            .map(|(protocol, port)| Endpoint {
                port: *port,
                protocol: (*protocol).into(),
            })
            .collect::<Vec<_>>(),
    );
    i
}

fn consumer(extra: &str) -> Url {
    Url::parse(&format!(
        "consumer://127.0.0.1/{IFACE}?interface={IFACE}&version=1.0.0&category=providers,configurators,routers{extra}"
    ))
    .unwrap()
}

fn hash_of(u: &Url) -> u64 {
    std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
        .hash_one(u)
}

fn by_text(urls: Vec<Url>) -> Vec<(String, Url)> {
    let mut v: Vec<(String, Url)> = urls.into_iter().map(|u| (u.to_string(), u)).collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// Asserts that the derived URLs are the parsed ones; returns them.
fn check(
    instance: &ServiceInstance,
    info: &MetadataInfo,
    consumer: &Url,
    templates: &mut UrlTemplates,
) -> Vec<Url> {
    let revision = info.revision.as_deref().unwrap_or_default();
    let services = RevisionServices::new(info);
    let derived = by_text(provider_urls(
        instance, revision, &services, consumer, IFACE, templates,
    ));
    let parsed = by_text(parsed_urls(instance, info, consumer, IFACE));
    assert_eq!(
        derived.iter().map(|d| &d.0).collect::<Vec<_>>(),
        parsed.iter().map(|p| &p.0).collect::<Vec<_>>(),
        "{instance:?}"
    );
    for ((text, d), (_, p)) in derived.iter().zip(&parsed) {
        assert_eq!(d, p, "{text}");
        assert_eq!(hash_of(d), hash_of(p), "{text}");
        assert_eq!(
            d.get_method_param("hello", "timeout"),
            p.get_method_param("hello", "timeout")
        );
    }
    derived.into_iter().map(|(_, u)| u).collect()
}

#[test]
fn derived_urls_are_the_parsed_ones() {
    let infos = [
        info("greeter", "1"),
        info("greeter", "2"),
        info("other-app", "1"),
    ];
    let consumers = [
        consumer(""),
        consumer("&group=g1"),
        consumer("&group=*"),
        consumer("&group=g1,g2&protocol=tri"),
        consumer("&group=g2&protocol=dubbo,tri"),
        Url::parse(&format!(
            "consumer://127.0.0.1/{IFACE}?interface={IFACE}&version=2.0.0&group=*"
        ))
        .unwrap(),
    ];
    let instances = [
        instance(
            "greeter",
            "10.0.0.1",
            20880,
            &[("dubbo", 20880), ("tri", 50051)],
        ),
        instance(
            "greeter",
            "10.0.0.2",
            20880,
            &[("dubbo", 20880), ("tri", 50051)],
        ),
        instance("greeter", "10.0.0.3", 20990, &[("dubbo", 20990)]),
        // No endpoints: the service's port, else the instance's.
        instance("greeter", "provider-7.example", 21000, &[]),
        // IPv6 and a host that parses as something else take the parse.
        instance("greeter", "fe80::1", 20880, &[("dubbo", 20880)]),
        instance("greeter", "user@h", 20880, &[("dubbo", 20880)]),
    ];
    let mut all = 0;
    for c in &consumers {
        let mut templates = UrlTemplates::default();
        for info in &infos {
            let mut by_service: HashMap<String, Url> = HashMap::new();
            for i in &instances {
                let i = ServiceInstance {
                    service_name: info.app.clone().unwrap(),
                    ..i.clone()
                };
                for u in check(&i, info, c, &mut templates) {
                    all += 1;
                    // Instances of one revision share each service's parameters.
                    let key = format!("{}{}", u.protocol().unwrap(), u.group().unwrap_or(""));
                    if i.host.starts_with("10.") {
                        let first = by_service.entry(key).or_insert_with(|| u.clone());
                        assert!(u.shares_params_with(first), "{u}");
                    }
                }
            }
        }
    }
    assert!(all > 100, "{all} URLs checked");
}

#[test]
fn many_revisions_and_changing_endpoints_stay_exact() {
    let c = consumer("&group=*");
    let mut templates = UrlTemplates::default();
    for n in 0..150 {
        let info = info("greeter", &n.to_string());
        let port = 20000 + n;
        let i = instance(
            "greeter",
            "10.1.2.3",
            port,
            &[("dubbo", port), ("tri", port + 1)],
        );
        assert_eq!(check(&i, &info, &c, &mut templates).len(), 3);
    }
}
