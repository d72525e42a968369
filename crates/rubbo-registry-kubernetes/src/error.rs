//! The errors of the Kubernetes discovery.

use rubbo_metadata::MetadataError;
use thiserror::Error;

/// An error of the Kubernetes discovery.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum KubernetesError {
    /// The registry URL or the client configuration (kubeconfig, in-cluster files).
    #[error("kubernetes configuration: {0}")]
    Config(String),
    /// A call to the API server failed.
    #[error("kubernetes API {what}: {source}")]
    Api {
        /// What was asked.
        what: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// No Pod to annotate: neither `POD_NAME` nor `HOSTNAME` is set.
    #[error("no Pod name to register on: set POD_NAME (or HOSTNAME)")]
    NoPodName,
    /// The Pod patch was not done within the timeout (it is still being retried).
    #[error("Pod {pod} not annotated within {millis} ms (still retrying)")]
    NotPublished {
        /// The Pod.
        pod: String,
        /// The wait.
        millis: u128,
    },
}

impl From<KubernetesError> for MetadataError {
    fn from(e: KubernetesError) -> Self {
        MetadataError::Backend(e.to_string())
    }
}
