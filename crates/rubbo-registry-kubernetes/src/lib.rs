#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod config;
mod discovery;
mod error;
pub mod parse;
mod registry;

pub use config::{
    CA_CERT_FILE_KEY, DEFAULT_MASTER_HOST, ENABLE_REGISTER_KEY, KUBECONFIG_KEY, NAMESPACE_KEY,
    OAUTH_TOKEN_KEY, POD_NAME_ENV, Settings, TIMEOUT_KEY, TRUST_CERTS_KEY, USE_HTTPS_KEY,
    WATCH_MAX_BACKOFF_KEY, client_config,
};
pub use discovery::KubernetesServiceDiscovery;
pub use error::KubernetesError;
pub use parse::METADATA_ANNOTATION;
pub use registry::{KubernetesRegistry, KubernetesRegistryFactory, register_factory};
