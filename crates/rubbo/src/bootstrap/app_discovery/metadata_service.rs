//! MetadataService V1 (`org.apache.dubbo.metadata.MetadataService`, version 1.0.0,
//! group = the application name) on the dubbo protocol: what a Java 3.3 consumer calls
//! to learn an instance's services (`getMetadataInfo(revision)`), answered with Java's
//! Hessian POJOs `org.apache.dubbo.metadata.MetadataInfo` / `$ServiceInfo`.
//!
//! With Triple configured (`metadata-service-protocol=tri`, or unset and a protocol
//! `tri`), V2 (`MetadataServiceV2` over Triple, protobuf; see `metadata_service_v2`)
//! is exported beside it and the instance advertises V2 (`meta-v=2.0.0`), as Java 3.3
//! does; V1 stays for consumers that call it, unless `only-use-metadata-v2`. V1 goes
//! on `metadata-service-protocol` when set.

use std::collections::BTreeSet;
use std::sync::Arc;

use parking_lot::Mutex;
use rubbo_common::{RpcError, keys};
use rubbo_metadata::MetadataInfo;
use tracing::debug;

/// The POJO class Java answers `getMetadataInfo` with.
impl crate::JavaType for MetadataInfo {
    const DESCRIPTOR: &'static str = "Lorg/apache/dubbo/metadata/MetadataInfo;";
}

/// `org.apache.dubbo.metadata.MetadataService` as Java 3.3 declares it (the methods
/// Java consumers and tools call).
#[rubbo::service(
    interface = "org.apache.dubbo.metadata.MetadataService",
    version = "1.0.0"
)]
pub(crate) trait MetadataService {
    /// `String serviceName()`: the application name.
    async fn service_name(&self) -> Result<Option<String>, RpcError>;
    /// `String version()`: `1.0.0`.
    async fn version(&self) -> Result<Option<String>, RpcError>;
    /// `MetadataInfo getMetadataInfo(String revision)`: the application's metadata
    /// when `revision` is its current one, else null.
    async fn get_metadata_info(
        &self,
        revision: Option<String>,
    ) -> Result<Option<MetadataInfo>, RpcError>;
    /// `List<MetadataInfo> getMetadataInfos()`.
    async fn get_metadata_infos(&self) -> Result<Option<Vec<MetadataInfo>>, RpcError>;
    /// `SortedSet<String> getExportedURLs()`: the full provider URLs.
    async fn get_exported_urls(&self) -> Result<Option<BTreeSet<String>>, RpcError>;
    /// `SortedSet<String> getSubscribedURLs()`: none (a provider).
    async fn get_subscribed_urls(&self) -> Result<Option<BTreeSet<String>>, RpcError>;
}

/// The served state: the application's current MetadataInfo and exported URLs.
#[derive(Debug, Default)]
pub(super) struct Served {
    pub(super) info: MetadataInfo,
    pub(super) urls: BTreeSet<String>,
}

/// The implementation over the shared [`Served`] state.
#[derive(Debug, Clone)]
pub(super) struct MetadataServiceImpl {
    pub(super) app: String,
    pub(super) served: Arc<Mutex<Served>>,
}

impl MetadataService for MetadataServiceImpl {
    async fn service_name(&self) -> Result<Option<String>, RpcError> {
        Ok(Some(self.app.clone()))
    }

    async fn version(&self) -> Result<Option<String>, RpcError> {
        Ok(Some(keys::METADATA_SERVICE_VERSION.to_owned()))
    }

    async fn get_metadata_info(
        &self,
        revision: Option<String>,
    ) -> Result<Option<MetadataInfo>, RpcError> {
        let served = self.served.lock();
        let found = revision
            .as_deref()
            .filter(|r| !r.is_empty() && *r == served.info.revision());
        debug!(
            revision = revision.as_deref().unwrap_or_default(),
            found = found.is_some(),
            "getMetadataInfo"
        );
        Ok(found.map(|_| served.info.clone()))
    }

    async fn get_metadata_infos(&self) -> Result<Option<Vec<MetadataInfo>>, RpcError> {
        Ok(Some(vec![self.served.lock().info.clone()]))
    }

    async fn get_exported_urls(&self) -> Result<Option<BTreeSet<String>>, RpcError> {
        Ok(Some(self.served.lock().urls.clone()))
    }

    async fn get_subscribed_urls(&self) -> Result<Option<BTreeSet<String>>, RpcError> {
        Ok(Some(BTreeSet::new()))
    }
}
