//! Node creation as Java's fault-tolerant `AbstractZookeeperClient.create` does it.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use zookeeper_client::{Acls, Client, CreateMode, CreateOptions, Error as ZkError};

/// Children of the root that are not services (Dubbo 3's config center, service-name
/// mapping and metadata report).
pub(crate) const NOT_SERVICES: [&str; 3] = ["config", "mapping", "metadata"];

/// Node ACLs: anyone may do anything, or, when the registry URL carries credentials
/// (`zookeeper://user:pass@host`, digest auth), only the creator (Java's
/// `CREATOR_ALL_ACL`).
#[derive(Debug, Clone)]
pub(crate) struct NodeModes {
    pub(crate) persistent: CreateOptions<'static>,
    pub(crate) ephemeral: CreateOptions<'static>,
}

impl NodeModes {
    pub(crate) fn new(authenticated: bool) -> Self {
        let acls = if authenticated {
            Acls::creator_all()
        } else {
            Acls::anyone_all()
        };
        NodeModes {
            persistent: CreateMode::Persistent.with_acls(acls),
            ephemeral: CreateMode::Ephemeral.with_acls(acls),
        }
    }
}

/// The parent paths a writer made or found, so that a node under one of them is created
/// with one request, as Java's interface-level writer caches them
/// (`persistentExistNodePath`); bounded by the parents of what the writer registers.
/// Writers of nodes under one new parent wait for one `mkdir` of it.
#[derive(Debug, Default)]
pub(crate) struct KnownParents(Mutex<HashMap<String, Arc<tokio::sync::Mutex<bool>>>>);

impl KnownParents {
    /// Makes `parent` (persistent) unless this writer made or found it already.
    async fn ensure(
        &self,
        client: &Client,
        parent: &str,
        modes: &NodeModes,
    ) -> Result<(), ZkError> {
        let made = self.0.lock().entry(parent.to_owned()).or_default().clone();
        let mut made = made.lock().await;
        if !*made {
            client.mkdir(parent, &modes.persistent).await?;
            *made = true;
        }
        Ok(())
    }
}

/// Creates `path` with `data`: under a parent this writer already made or found, with
/// one request (a parent deleted since is made again when the create finds none);
/// else after one `mkdir` of the parent, remembered. Not a `mkdir` before every node
/// (one create request more per node), nor a create first (concurrent first nodes
/// would each send their data once more after the `mkdir`).
pub(crate) async fn create_with_parents(
    client: &Client,
    path: &str,
    data: &[u8],
    mode: &CreateOptions<'_>,
    modes: &NodeModes,
    known: &KnownParents,
) -> Result<(), ZkError> {
    let Some(parent) = path.rfind('/').filter(|&i| i > 0).map(|i| &path[..i]) else {
        return client.create(path, data, mode).await.map(|_| ());
    };
    known.ensure(client, parent, modes).await?;
    match client.create(path, data, mode).await {
        Err(ZkError::NoNode) => {
            client.mkdir(parent, &modes.persistent).await?;
            client.create(path, data, mode).await.map(|_| ())
        }
        r => r.map(|_| ()),
    }
}

/// Creates `path` (parents persistent). An ephemeral node left by another session is
/// replaced so that it belongs to ours (Java's fault-tolerant create).
pub(crate) async fn create_node(
    client: &Client,
    path: &str,
    ephemeral: bool,
    modes: &NodeModes,
    known: &KnownParents,
) -> Result<(), ZkError> {
    let mode = if ephemeral {
        &modes.ephemeral
    } else {
        &modes.persistent
    };
    match create_with_parents(client, path, &[], mode, modes, known).await {
        Ok(_) => Ok(()),
        Err(ZkError::NodeExists) if !ephemeral => Ok(()),
        Err(ZkError::NodeExists) => {
            if let Some(stat) = client.check_stat(path).await? {
                if stat.ephemeral_owner == client.session_id().0 {
                    return Ok(());
                }
            }
            match client.delete(path, None).await {
                Ok(()) | Err(ZkError::NoNode) => {}
                Err(e) => return Err(e),
            }
            client.create(path, &[], mode).await.map(|_| ())
        }
        Err(e) => Err(e),
    }
}
