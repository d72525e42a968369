//! `ServiceInstance`: one running instance of an application, and the Curator
//! `ServiceInstance` JSON Java's `ZookeeperServiceDiscovery` writes at
//! `/services/{app}/{host}:{port}`.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use rubbo_common::{Url, keys};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::MetadataError;
use crate::instance_metadata::InstanceMetadata;
use crate::interner::MetadataInterner;

/// The payload class Java's ZooKeeper discovery puts in the Curator JSON.
pub const ZOOKEEPER_INSTANCE_CLASS: &str = "org.apache.dubbo.registry.zookeeper.ZookeeperInstance";

/// An application instance: its name, address and metadata (Java's
/// `DefaultServiceInstance`, of which Dubbo reads only these over the wire).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceInstance {
    /// The application name.
    pub service_name: String,
    /// The host.
    pub host: String,
    /// The port (the first protocol's).
    pub port: u16,
    /// The metadata: `dubbo.metadata.revision`, `dubbo.endpoints`... (sorted, as Java's
    /// `getSortedMetadata`).
    pub metadata: InstanceMetadata,
}

/// A protocol and the port it is served on, one entry of `dubbo.endpoints`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// The port.
    pub port: u16,
    /// The protocol.
    pub protocol: String,
}

/// The Curator JSON, fields in Curator's order.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CuratorInstance {
    name: String,
    id: String,
    address: String,
    port: u16,
    #[serde(default)]
    ssl_port: Option<u16>,
    payload: Option<Payload>,
    #[serde(default, rename = "registrationTimeUTC")]
    registration_time_utc: i64,
    #[serde(default = "dynamic")]
    service_type: String,
    #[serde(default)]
    uri_spec: Option<Value>,
}

fn dynamic() -> String {
    "DYNAMIC".to_owned()
}

#[derive(Serialize, Deserialize)]
struct Payload {
    #[serde(rename = "@class", default)]
    class: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    metadata: BTreeMap<String, Option<String>>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl ServiceInstance {
    /// An instance with no metadata yet.
    pub fn new(service_name: impl Into<String>, host: impl Into<String>, port: u16) -> Self {
        ServiceInstance {
            service_name: service_name.into(),
            host: host.into(),
            port,
            metadata: InstanceMetadata::new(),
        }
    }

    /// Orders instances as their [`id`](Self::id)s order, without writing them.
    ///
    /// ```
    /// use rubbo_metadata::ServiceInstance;
    /// let a = ServiceInstance::new("app", "10.0.0.1", 9000);
    /// let b = ServiceInstance::new("app", "10.0.0.1", 20880);
    /// assert_eq!(a.cmp_id(&b), a.id().cmp(&b.id()));
    /// ```
    pub fn cmp_id(&self, other: &ServiceInstance) -> std::cmp::Ordering {
        fn digits(port: u16, buf: &mut [u8; 5]) -> &[u8] {
            let (mut n, mut i) = (port, buf.len());
            loop {
                i -= 1;
                // A digit: `n % 10` is below 10.
                buf[i] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    return &buf[i..];
                }
            }
        }
        let (mut a, mut b) = ([0u8; 5], [0u8; 5]);
        let a = self
            .host
            .bytes()
            .chain(*b":")
            .chain(digits(self.port, &mut a).iter().copied());
        let b = other
            .host
            .bytes()
            .chain(*b":")
            .chain(digits(other.port, &mut b).iter().copied());
        a.cmp(b)
    }

    /// `host:port`, the instance's id and ZooKeeper node name.
    pub fn id(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The revision of the instance's MetadataInfo, if any.
    pub fn revision(&self) -> Option<&str> {
        self.metadata
            .get(keys::EXPORTED_SERVICES_REVISION_PROPERTY_NAME)
            .map(String::as_str)
    }

    /// The endpoints of `dubbo.endpoints` (none when absent or garbage).
    pub fn endpoints(&self) -> Vec<Endpoint> {
        self.metadata
            .get(keys::ENDPOINTS)
            .and_then(|e| serde_json::from_str(e).ok())
            .unwrap_or_default()
    }

    /// Sets `dubbo.endpoints` (Java writes a JSON list of `{"port":..,"protocol":..}`).
    pub fn set_endpoints(&mut self, endpoints: &[Endpoint]) {
        let json = serde_json::to_string(endpoints).unwrap_or_else(|_| "[]".to_owned());
        self.metadata.insert(keys::ENDPOINTS.to_owned(), json);
    }

    /// The Curator `ServiceInstance` JSON Java writes (`registrationTimeUTC` now).
    pub fn to_curator_json(&self) -> String {
        self.to_curator_json_at(now_ms())
    }

    /// [`to_curator_json`](Self::to_curator_json) with a given registration time.
    pub fn to_curator_json_at(&self, registration_time_ms: i64) -> String {
        let id = self.id();
        let c = CuratorInstance {
            name: self.service_name.clone(),
            id: id.clone(),
            address: self.host.clone(),
            port: self.port,
            ssl_port: None,
            payload: Some(Payload {
                class: Some(ZOOKEEPER_INSTANCE_CLASS.to_owned()),
                id: Some(id),
                name: Some(self.service_name.clone()),
                metadata: self
                    .metadata
                    .iter()
                    .map(|(k, v)| (k.clone(), Some(v.clone())))
                    .collect(),
            }),
            registration_time_utc: registration_time_ms,
            service_type: dynamic(),
            uri_spec: None,
        };
        serde_json::to_string(&c).unwrap_or_default()
    }

    /// Parses a Curator `ServiceInstance` JSON (Java's or ours), reading what Dubbo
    /// reads: `name`, `address`, `port` and `payload.metadata` (null values dropped).
    /// Garbage is an error, never a panic.
    pub fn from_curator_json(json: &[u8]) -> Result<ServiceInstance, MetadataError> {
        Self::parse_curator_json(json, None)
    }

    /// [`from_curator_json`](Self::from_curator_json), the metadata's keys and values
    /// shared with the other instances parsed with `interner` (the same instance, less
    /// memory: see [`MetadataInterner`]).
    pub fn from_curator_json_shared(
        json: &[u8],
        interner: &mut MetadataInterner,
    ) -> Result<ServiceInstance, MetadataError> {
        Self::parse_curator_json(json, Some(interner))
    }

    fn parse_curator_json(
        json: &[u8],
        interner: Option<&mut MetadataInterner>,
    ) -> Result<ServiceInstance, MetadataError> {
        let c: CuratorInstance = serde_json::from_slice(json).map_err(|e| MetadataError::Json {
            what: "service instance",
            reason: e.to_string(),
        })?;
        let metadata = c
            .payload
            .map(|p| {
                let entries = p
                    .metadata
                    .into_iter()
                    .filter_map(|(k, v)| v.map(|v| (k, v)));
                match interner {
                    Some(interner) => InstanceMetadata::collect_shared(entries, interner),
                    None => entries.collect(),
                }
            })
            .unwrap_or_default();
        Ok(ServiceInstance {
            service_name: c.name,
            host: c.address,
            port: c.port,
            metadata,
        })
    }
}

/// The provider keys Java copies from the MetadataService URL into
/// `dubbo.metadata-service.url-params`, in Java's order (`RegistryProtocol
/// .DEFAULT_REGISTER_PROVIDER_KEYS`), less `application`, `group`, `deprecated` and
/// `timestamp`, which Java removes first.
const URL_PARAMS_KEYS: [&str; 23] = [
    keys::CODEC_KEY,
    keys::EXCHANGER_KEY,
    keys::SERIALIZATION_KEY,
    keys::PREFER_SERIALIZATION_KEY,
    keys::CLUSTER_KEY,
    keys::CONNECTIONS_KEY,
    keys::LOADBALANCE_KEY,
    keys::MOCK_KEY,
    keys::PATH_KEY,
    keys::TIMEOUT_KEY,
    keys::TOKEN_KEY,
    keys::VERSION_KEY,
    keys::WARMUP_KEY,
    keys::WEIGHT_KEY,
    keys::DUBBO_VERSION_KEY,
    keys::RELEASE_KEY,
    keys::SIDE_KEY,
    keys::IPV6_KEY,
    keys::PACKABLE_METHOD_FACTORY_KEY,
    keys::AUTH_KEY,
    keys::AUTHENTICATOR_KEY,
    keys::USERNAME_KEY,
    keys::PASSWORD_KEY,
];

/// The value of `dubbo.metadata-service.url-params` for the MetadataService exported
/// at `url` (Java's `ServiceInstanceMetadataUtils.getMetadataServiceParameter`): the
/// register keys it has, then `port` and `protocol`, as a JSON object of strings in
/// that order.
pub fn metadata_service_url_params(url: &Url) -> String {
    let mut out = String::from("{");
    let mut first = true;
    let mut push = |k: &str, v: &str| {
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(&Value::from(k).to_string());
        out.push(':');
        out.push_str(&Value::from(v).to_string());
    };
    for k in URL_PARAMS_KEYS {
        if let Some(v) = url.get_param(k).filter(|v| !v.trim().is_empty()) {
            push(k, v);
        }
    }
    push(keys::PORT_KEY, &url.port().to_string());
    push(keys::PROTOCOL_KEY, url.protocol().unwrap_or_default());
    out.push('}');
    out
}

/// The MetadataService URL parameters an instance advertises, parsed (none when
/// absent or garbage).
pub fn parse_url_params(instance: &ServiceInstance) -> BTreeMap<String, String> {
    instance
        .metadata
        .get(keys::METADATA_SERVICE_URL_PARAMS_PROPERTY_NAME)
        .and_then(|p| serde_json::from_str(p).ok())
        .unwrap_or_default()
}

/// Instance metadata from its JSON object form (a Kubernetes Pod's `io.dubbo/metadata`
/// annotation, `rubbo-registry-kubernetes`): string values are taken as they are, other scalars as their JSON text, nulls
/// dropped.
pub fn parse_metadata(json: &str) -> Result<BTreeMap<String, String>, String> {
    let value: Value = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let Value::Object(map) = value else {
        return Err("not a JSON object".to_owned());
    };
    Ok(map
        .into_iter()
        .filter_map(|(k, v)| match v {
            Value::Null => None,
            Value::String(s) => Some((k, s)),
            other => Some((k, other.to_string())),
        })
        .collect())
}

/// Instance metadata as the JSON object of strings a provider writes (the Pod
/// annotation's value)
/// (what Java writes with `JSONObject.toJSONString(instance.getMetadata())`), from an
/// [`InstanceMetadata`] or a `BTreeMap<String, String>`, entries in key order.
pub fn metadata_json<'a>(metadata: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    let map: BTreeMap<&str, &str> = metadata
        .into_iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    serde_json::to_string(&map).unwrap_or_else(|_| "{}".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node Java 3.3.6 wrote (`InteropProvider --register-mode instance`).
    const JAVA_NODE: &str = r#"{"name":"interop-provider","id":"127.0.0.1:47759","address":"127.0.0.1","port":47759,"sslPort":null,"payload":{"@class":"org.apache.dubbo.registry.zookeeper.ZookeeperInstance","id":"127.0.0.1:47759","name":"interop-provider","metadata":{"dubbo.endpoints":"[{\"port\":47759,\"protocol\":\"dubbo\"}]","dubbo.metadata-service.url-params":"{\"prefer.serialization\":\"hessian2,fastjson2\",\"version\":\"1.0.0\",\"dubbo\":\"2.0.2\",\"release\":\"3.3.6\",\"side\":\"provider\",\"port\":\"47759\",\"protocol\":\"dubbo\"}","dubbo.metadata.revision":"e87870eed9f9d4ce5d65e26098f85b35","dubbo.metadata.storage-type":"local","meta-v":"1.0.0","timestamp":"1796142813040"}},"registrationTimeUTC":1796142818860,"serviceType":"DYNAMIC","uriSpec":null}"#;

    #[test]
    fn reads_and_writes_the_node_java_writes() {
        let i = ServiceInstance::from_curator_json(JAVA_NODE.as_bytes()).expect("parses");
        assert_eq!(i.service_name, "interop-provider");
        assert_eq!(i.id(), "127.0.0.1:47759");
        assert_eq!(i.revision(), Some("e87870eed9f9d4ce5d65e26098f85b35"));
        assert_eq!(
            i.endpoints(),
            [Endpoint {
                port: 47759,
                protocol: "dubbo".into()
            }]
        );
        assert_eq!(parse_url_params(&i)["release"], "3.3.6");
        // Written again with Java's registration time, it is Java's text.
        assert_eq!(i.to_curator_json_at(1_796_142_818_860), JAVA_NODE);
        // Parsed with an interner: the same instance, the same text written.
        let mut interner = MetadataInterner::default();
        let shared = ServiceInstance::from_curator_json_shared(JAVA_NODE.as_bytes(), &mut interner)
            .expect("parses");
        assert_eq!(shared, i);
        assert_eq!(shared.to_curator_json_at(1_796_142_818_860), JAVA_NODE);
        let again = ServiceInstance::from_curator_json_shared(JAVA_NODE.as_bytes(), &mut interner)
            .expect("parses");
        assert!(std::ptr::eq(
            &again.metadata[keys::METADATA_SERVICE_URL_PARAMS_PROPERTY_NAME],
            &shared.metadata[keys::METADATA_SERVICE_URL_PARAMS_PROPERTY_NAME],
        ));
    }

    #[test]
    fn url_params_follow_javas_order() {
        let url = Url::parse("dubbo://127.0.0.1:47759/org.apache.dubbo.metadata.MetadataService?application=a&group=a&deprecated=false&timestamp=1&prefer.serialization=hessian2,fastjson2&version=1.0.0&dubbo=2.0.2&release=3.3.6&side=provider&methods=x").expect("url");
        assert_eq!(
            metadata_service_url_params(&url),
            r#"{"prefer.serialization":"hessian2,fastjson2","version":"1.0.0","dubbo":"2.0.2","release":"3.3.6","side":"provider","port":"47759","protocol":"dubbo"}"#
        );
    }

    #[test]
    fn garbage_is_an_error_never_a_panic() {
        for bad in [
            &b""[..],
            b"{",
            b"null",
            b"[]",
            b"{\"name\":1}",
            b"{\"name\":\"a\",\"id\":\"x\",\"address\":\"h\",\"port\":70000}",
            b"\xff\xfe",
        ] {
            assert!(ServiceInstance::from_curator_json(bad).is_err(), "{bad:?}");
        }
        // Unknown fields and a missing payload are fine.
        let ok = br#"{"name":"a","id":"h:1","address":"h","port":1,"enabled":true}"#;
        let i = ServiceInstance::from_curator_json(ok).expect("tolerant");
        assert!(i.metadata.is_empty());
        // Garbage inside metadata values is the reader's business, and yields nothing.
        let mut i = i;
        i.metadata.insert(keys::ENDPOINTS.into(), "[{".into());
        assert!(i.endpoints().is_empty());
    }
}
