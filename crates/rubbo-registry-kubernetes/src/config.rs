//! A `kubernetes://` registry URL to a kube client configuration, with the parameter
//! names of Java's `KubernetesClientConst` / `KubernetesConfigUtils`.

use std::path::PathBuf;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use rubbo_common::Url;

use crate::error::KubernetesError;

/// The host that means "the cluster this process runs in" (Java's
/// `DEFAULT_MASTER_PLACEHOLDER`): in-cluster configuration, else the kubeconfig.
pub const DEFAULT_MASTER_HOST: &str = "DEFAULT_MASTER_HOST";

/// URL parameter: the namespace of the Services and Pods (default: the in-cluster
/// service account's, the kubeconfig context's, or `default`).
pub const NAMESPACE_KEY: &str = "namespace";
/// URL parameter: a bearer token for the API server.
pub const OAUTH_TOKEN_KEY: &str = "oauthToken";
/// URL parameter: a PEM file of the CA that signed the API server's certificate.
pub const CA_CERT_FILE_KEY: &str = "caCertFile";
/// URL parameter: `true` accepts any server certificate (tests only).
pub const TRUST_CERTS_KEY: &str = "trustCerts";
/// URL parameter: `false` talks plain HTTP to `host:port` (default `true`).
pub const USE_HTTPS_KEY: &str = "useHttps";
/// URL parameter: `false` writes nothing on the Pod (a consumer-only application).
pub const ENABLE_REGISTER_KEY: &str = "enableRegister";
/// URL parameter (Rubbo's): a kubeconfig file to read instead of the default one.
pub const KUBECONFIG_KEY: &str = "kubeconfig";
/// URL parameter (Rubbo's): the longest wait, in ms, between two reconnections of a
/// watch (default 5000; the first waits 200 ms, each next one twice as long).
pub const WATCH_MAX_BACKOFF_KEY: &str = "watch.max-backoff";
/// URL parameter: how long, in ms, `watch` waits for the first complete list and
/// `register` for the Pod patch (default 5000; Dubbo's registry `timeout`).
pub const TIMEOUT_KEY: &str = "timeout";

/// The environment variable naming this process's Pod (the downward API's
/// `metadata.name`), read before `HOSTNAME`.
pub const POD_NAME_ENV: &str = "POD_NAME";

/// What a `kubernetes://` URL says.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The namespace given, if any.
    pub namespace: Option<String>,
    /// Whether the Pod is annotated (`enableRegister`, default `true`).
    pub enable_register: bool,
    /// The longest reconnection wait of a watch.
    pub max_backoff: Duration,
    /// The wait for a first list or a Pod patch.
    pub timeout: Duration,
    /// This process's Pod: `POD_NAME`, else `HOSTNAME`.
    pub pod_name: Option<String>,
}

fn millis(url: &Url, key: &str, default: u64) -> Duration {
    Duration::from_millis(
        url.get_param(key)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(default),
    )
}

fn flag(url: &Url, key: &str, default: bool) -> bool {
    url.get_param(key)
        .map_or(default, |v| v.trim().eq_ignore_ascii_case("true"))
}

impl Settings {
    /// The settings of `url`, the Pod name from the environment.
    pub fn of(url: &Url) -> Settings {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Settings {
            namespace: url
                .get_param(NAMESPACE_KEY)
                .filter(|n| !n.trim().is_empty())
                .map(str::to_owned),
            enable_register: flag(url, ENABLE_REGISTER_KEY, true),
            max_backoff: millis(url, WATCH_MAX_BACKOFF_KEY, 5000).max(Duration::from_millis(200)),
            timeout: millis(url, TIMEOUT_KEY, 5000),
            pod_name: env(POD_NAME_ENV).or_else(|| env("HOSTNAME")),
        }
    }
}

/// The kube client configuration of `url`:
///
/// - host `DEFAULT_MASTER_HOST` (or none): in-cluster (`KUBERNETES_SERVICE_HOST` and the
///   service-account token), else the kubeconfig (`kubeconfig` parameter, `KUBECONFIG`,
///   `~/.kube/config`);
/// - another host: `https://host:port` (`http` with `useHttps=false`), with
///   `oauthToken`, `caCertFile` and `trustCerts`.
///
/// `namespace` overrides the namespace in every case.
pub async fn client_config(url: &Url) -> Result<kube::Config, KubernetesError> {
    let host = url.host().unwrap_or_default();
    let mut config = if host.is_empty() || host.eq_ignore_ascii_case(DEFAULT_MASTER_HOST) {
        match url.get_param(KUBECONFIG_KEY) {
            Some(path) => {
                let kc = Kubeconfig::read_from(path)
                    .map_err(|e| KubernetesError::Config(format!("kubeconfig {path}: {e}")))?;
                kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                    .await
                    .map_err(|e| KubernetesError::Config(format!("kubeconfig {path}: {e}")))?
            }
            None => kube::Config::infer()
                .await
                .map_err(|e| KubernetesError::Config(e.to_string()))?,
        }
    } else {
        let scheme = if flag(url, USE_HTTPS_KEY, true) {
            "https"
        } else {
            "http"
        };
        let port = match url.port() {
            0 => 443,
            p => p,
        };
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host.to_owned()
        };
        let uri: http::Uri = format!("{scheme}://{host}:{port}")
            .parse()
            .map_err(|e| KubernetesError::Config(format!("API server address: {e}")))?;
        kube::Config::new(uri)
    };
    if let Some(token) = url.get_param(OAUTH_TOKEN_KEY).filter(|t| !t.is_empty()) {
        let value = http::HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| KubernetesError::Config(format!("bad {OAUTH_TOKEN_KEY}")))?;
        config.headers.push((http::header::AUTHORIZATION, value));
    }
    if let Some(ca) = url.get_param(CA_CERT_FILE_KEY).filter(|c| !c.is_empty()) {
        config.root_cert_file = Some(PathBuf::from(ca));
    }
    if flag(url, TRUST_CERTS_KEY, false) {
        config.accept_invalid_certs = true;
    }
    if let Some(ns) = url
        .get_param(NAMESPACE_KEY)
        .filter(|n| !n.trim().is_empty())
    {
        config.default_namespace = ns.to_owned();
    }
    config.connect_timeout = Some(millis(url, TIMEOUT_KEY, 5000).max(Duration::from_secs(1)));
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_explicit_api_server_takes_token_ca_and_namespace_from_the_url() {
        let url = Url::parse(
            "kubernetes://127.0.0.1:6443?namespace=shop&oauthToken=t0k&caCertFile=/tmp/ca.crt&enableRegister=false",
        )
        .unwrap();
        let c = client_config(&url).await.unwrap();
        assert_eq!(c.cluster_url.to_string(), "https://127.0.0.1:6443/");
        assert_eq!(c.default_namespace, "shop");
        assert_eq!(c.root_cert_file, Some(PathBuf::from("/tmp/ca.crt")));
        assert!(!c.accept_invalid_certs);
        let auth: Vec<_> = c
            .headers
            .iter()
            .filter(|(k, _)| k == http::header::AUTHORIZATION)
            .map(|(_, v)| v.to_str().unwrap().to_owned())
            .collect();
        assert_eq!(auth, ["Bearer t0k"]);
        let s = Settings::of(&url);
        assert!(!s.enable_register);
        assert_eq!(s.namespace.as_deref(), Some("shop"));
        assert_eq!(s.timeout, Duration::from_secs(5));
    }

    #[tokio::test]
    async fn plain_http_and_trust_certs_are_opt_in() {
        let url = Url::parse("kubernetes://10.0.0.1:8080?useHttps=false&trustCerts=true").unwrap();
        let c = client_config(&url).await.unwrap();
        assert_eq!(c.cluster_url.to_string(), "http://10.0.0.1:8080/");
        assert!(c.accept_invalid_certs);
        assert!(Settings::of(&url).enable_register);
    }
}
