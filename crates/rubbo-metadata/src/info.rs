//! `MetadataInfo` and `ServiceInfo`: what an application instance serves, as Java's
//! `org.apache.dubbo.metadata.MetadataInfo` holds it, with its revision computed as
//! Java computes it (`calAndGetRevision`, `ServiceInfo.toDescString`).

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use md5::{Digest, Md5};
use rubbo_common::{Url, keys};
use serde::{Deserialize, Serialize};

use crate::error::MetadataError;

/// The revision of an application that serves nothing (Java's
/// `RevisionResolver.EMPTY_REVISION`).
pub const EMPTY_REVISION: &str = "0";

/// The provider URL parameters left out of a [`ServiceInfo`] (Java's
/// `DefaultMetadataParamsFilter.serviceParamsExcluded`): a key equal to one of these
/// (ignoring case), or containing `.` + one of these (`sayHello.timestamp`), is left out.
pub const EXCLUDED_SERVICE_PARAMS: [&str; 13] = [
    keys::MONITOR_KEY,
    keys::BIND_IP_KEY,
    keys::BIND_PORT_KEY,
    keys::QOS_ENABLE_KEY,
    keys::QOS_HOST_KEY,
    keys::QOS_PORT_KEY,
    keys::ACCEPT_FOREIGN_IP_KEY,
    keys::VALIDATION_KEY,
    keys::INTERFACES_KEY,
    keys::PID_KEY,
    keys::TIMESTAMP_KEY,
    keys::HEARTBEAT_TIMEOUT_KEY,
    keys::IPV6_KEY,
];

/// The provider URL parameters copied to the instance (Java's
/// `DefaultMetadataParamsFilter.instanceParamsIncluded`).
pub const INSTANCE_PARAMS: [&str; 3] = [
    keys::HEARTBEAT_TIMEOUT_KEY,
    keys::TIMESTAMP_KEY,
    keys::IPV6_KEY,
];

/// One exported service on one protocol (Java's `MetadataInfo.ServiceInfo`). The
/// field names are Java's, in JSON and in Hessian; unset fields are left out of JSON,
/// as fastjson2 leaves out nulls.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename = "org.apache.dubbo.metadata.MetadataInfo$ServiceInfo")]
pub struct ServiceInfo {
    /// The group, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The interface name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The provider URL parameters, [filtered](EXCLUDED_SERVICE_PARAMS).
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    /// The URL path (most of the time the interface name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The port the service is served on.
    #[serde(default)]
    pub port: i32,
    /// The protocol (`dubbo`, `tri`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The version, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

fn non_empty(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.is_empty())
}

impl ServiceInfo {
    /// The service info of an exported provider URL, its parameters filtered as Java's
    /// default `MetadataParamsFilter` does.
    pub fn from_url(url: &Url) -> ServiceInfo {
        let path = url
            .path()
            .unwrap_or_default()
            .trim_start_matches('/')
            .to_owned();
        let name = url
            .get_param(keys::INTERFACE_KEY)
            .filter(|i| !i.is_empty())
            .map_or_else(|| path.clone(), str::to_owned);
        let params = url
            .params()
            .iter()
            .filter(|(k, _)| !is_excluded(k))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        ServiceInfo {
            name: Some(name),
            group: non_empty(url.get_param(keys::GROUP_KEY)).map(str::to_owned),
            version: non_empty(url.get_param(keys::VERSION_KEY)).map(str::to_owned),
            protocol: url.protocol().map(str::to_owned),
            port: i32::from(url.port()),
            path: Some(path),
            params,
        }
    }

    /// `{group}/{interface}:{version}`, empty parts left out (Java's
    /// `URL.buildKey`).
    pub fn service_key(&self) -> String {
        let mut key = String::new();
        if let Some(g) = non_empty(self.group.as_deref()) {
            key.push_str(g);
            key.push('/');
        }
        key.push_str(self.name.as_deref().unwrap_or("null"));
        if let Some(v) = non_empty(self.version.as_deref()) {
            key.push(':');
            key.push_str(v);
        }
        key
    }

    /// The service key and `:{protocol}`: the key of the service in
    /// [`MetadataInfo::services`] (Java's `getMatchKey`).
    pub fn match_key(&self) -> String {
        let mut key = self.service_key();
        if let Some(p) = non_empty(self.protocol.as_deref()) {
            key.push(':');
            key.push_str(p);
        }
        key
    }

    /// Java's `toDescString`: match key, port, path, then the parameters as a
    /// `TreeMap`'s `toString` (`{a=1, b=2}`).
    pub fn desc_string(&self) -> String {
        let mut s = self.match_key();
        let _ = write!(s, "{}", self.port);
        s.push_str(self.path.as_deref().unwrap_or("null"));
        let mut params: Vec<(&String, &String)> = self.params.iter().collect();
        params.sort_by(|a, b| java_cmp(a.0, b.0));
        s.push('{');
        for (i, (k, v)) in params.into_iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            s.push_str(k);
            s.push('=');
            s.push_str(v);
        }
        s.push('}');
        s
    }
}

/// Whether Java's default params filter leaves `key` out.
fn is_excluded(key: &str) -> bool {
    EXCLUDED_SERVICE_PARAMS
        .iter()
        .any(|e| key.eq_ignore_ascii_case(e) || key.contains(&format!(".{e}")))
}

/// Java's `String.compareTo`: by UTF-16 code unit, which differs from Rust's byte
/// order only above U+FFFF.
fn java_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// What an application instance serves (Java's `MetadataInfo`): the application name,
/// the revision, and each service under its [match key](ServiceInfo::match_key).
/// The JSON (what `/dubbo/metadata/{app}/{revision}` holds) and the Hessian POJO
/// (what `MetadataService.getMetadataInfo` answers) have Java's field names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename = "org.apache.dubbo.metadata.MetadataInfo")]
pub struct MetadataInfo {
    /// The application name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// The revision ([`calculate_revision`](Self::calculate_revision)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The services by match key.
    #[serde(default)]
    pub services: HashMap<String, ServiceInfo>,
}

impl MetadataInfo {
    /// An application with no service yet (revision [`EMPTY_REVISION`]).
    pub fn new(app: impl Into<String>) -> MetadataInfo {
        let mut info = MetadataInfo {
            app: Some(app.into()),
            revision: None,
            services: HashMap::new(),
        };
        info.update_revision();
        info
    }

    /// Adds (or replaces) a service under its match key and updates the revision.
    pub fn add_service(&mut self, service: ServiceInfo) {
        self.services.insert(service.match_key(), service);
        self.update_revision();
    }

    /// Removes the service of `match_key` and updates the revision; whether it was
    /// there.
    pub fn remove_service(&mut self, match_key: &str) -> bool {
        let removed = self.services.remove(match_key).is_some();
        self.update_revision();
        removed
    }

    /// The revision as Java's `calAndGetRevision` computes it: the lowercase hex MD5
    /// of the UTF-8 of the app name followed by each service's
    /// [`desc_string`](ServiceInfo::desc_string), services in ascending key order;
    /// [`EMPTY_REVISION`] with no service.
    pub fn calculate_revision(&self) -> String {
        if self.services.is_empty() {
            return EMPTY_REVISION.to_owned();
        }
        let mut entries: Vec<(&String, &ServiceInfo)> = self.services.iter().collect();
        entries.sort_by(|a, b| java_cmp(a.0, b.0));
        let mut s = self.app.clone().unwrap_or_else(|| "null".to_owned());
        for (_, service) in entries {
            s.push_str(&service.desc_string());
        }
        let digest = Md5::digest(s.as_bytes());
        let mut hex = String::with_capacity(32);
        for b in digest {
            let _ = write!(hex, "{b:02x}");
        }
        hex
    }

    /// Sets [`revision`](Self::revision) to [`calculate_revision`](Self::calculate_revision);
    /// whether it changed.
    pub fn update_revision(&mut self) -> bool {
        let r = self.calculate_revision();
        let changed = self.revision.as_deref() != Some(r.as_str());
        self.revision = Some(r);
        changed
    }

    /// The revision, [`EMPTY_REVISION`] when unset.
    pub fn revision(&self) -> &str {
        self.revision.as_deref().unwrap_or(EMPTY_REVISION)
    }

    /// The JSON Java writes to `/dubbo/metadata/{app}/{revision}` (fields in fastjson2's
    /// order, nulls left out).
    pub fn to_json(&self) -> String {
        let services: BTreeMap<&String, &ServiceInfo> = self.services.iter().collect();
        let view = JsonView {
            app: self.app.as_deref(),
            revision: self.revision.as_deref(),
            services,
        };
        serde_json::to_string(&view).unwrap_or_default()
    }

    /// Parses the JSON of [`to_json`](Self::to_json) (or Java's). Garbage is an error.
    pub fn from_json(json: &str) -> Result<MetadataInfo, MetadataError> {
        serde_json::from_str(json).map_err(|e| MetadataError::Json {
            what: "MetadataInfo",
            reason: e.to_string(),
        })
    }
}

/// The JSON shape of [`MetadataInfo`], services sorted so that the text is stable.
#[derive(Serialize)]
struct JsonView<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    app: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    revision: Option<&'a str>,
    services: BTreeMap<&'a String, &'a ServiceInfo>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(params: &[(&str, &str)]) -> ServiceInfo {
        ServiceInfo {
            name: Some("org.example.Greeter".into()),
            group: None,
            version: Some("1.0.0".into()),
            protocol: Some("dubbo".into()),
            port: 20880,
            path: Some("org.example.Greeter".into()),
            params: params
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn the_desc_string_is_javas_tree_map_form() {
        let s = service(&[("b", "2"), ("a", "1")]);
        assert_eq!(
            s.desc_string(),
            "org.example.Greeter:1.0.0:dubbo20880org.example.Greeter{a=1, b=2}"
        );
        assert_eq!(
            service(&[]).desc_string(),
            "org.example.Greeter:1.0.0:dubbo20880org.example.Greeter{}"
        );
    }

    #[test]
    fn keys_leave_out_empty_parts() {
        let mut s = service(&[]);
        s.group = Some("g".into());
        assert_eq!(s.match_key(), "g/org.example.Greeter:1.0.0:dubbo");
        s.group = Some(String::new());
        s.version = None;
        assert_eq!(s.service_key(), "org.example.Greeter");
    }

    #[test]
    fn params_are_filtered_as_java_does() {
        let url = Url::parse(
            "dubbo://127.0.0.1:20880/org.example.Greeter?interface=org.example.Greeter&pid=1&timestamp=2&sayHello.timestamp=3&QOS.ENABLE=false&timeout=100&side=provider",
        )
        .expect("url");
        let s = ServiceInfo::from_url(&url);
        let keys: Vec<&str> = s.params.keys().map(String::as_str).collect();
        assert_eq!(keys, ["interface", "side", "timeout"]);
        assert_eq!(s.port, 20880);
        assert_eq!(s.protocol.as_deref(), Some("dubbo"));
    }

    #[test]
    fn no_service_is_revision_zero_and_a_service_changes_it() {
        let mut info = MetadataInfo::new("app");
        assert_eq!(info.revision(), EMPTY_REVISION);
        info.add_service(service(&[]));
        let r = info.revision().to_owned();
        assert_eq!(r.len(), 32);
        assert!(
            !info.update_revision(),
            "the same services keep the revision"
        );
        assert!(info.remove_service("org.example.Greeter:1.0.0:dubbo"));
        assert_eq!(info.revision(), EMPTY_REVISION);
    }

    #[test]
    fn garbage_json_is_an_error() {
        for bad in ["", "{", "[1,2]", "{\"services\":3}", "\u{0}"] {
            assert!(MetadataInfo::from_json(bad).is_err(), "{bad:?}");
        }
    }
}
