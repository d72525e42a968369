//! Node creation as Java's fault-tolerant `AbstractZookeeperClient.create` does it.

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

/// Creates `path` with `data`, and its parents (persistent) only when the create finds
/// none: one request when they exist (as Curator's `creatingParentContainersIfNeeded`
/// under Java's application-level writer, and Java's interface-level writer, which
/// checks each parent once), not a `mkdir` of the parent before every node.
pub(crate) async fn create_with_parents(
    client: &Client,
    path: &str,
    data: &[u8],
    mode: &CreateOptions<'_>,
    modes: &NodeModes,
) -> Result<(), ZkError> {
    match client.create(path, data, mode).await {
        Err(ZkError::NoNode) => {
            if let Some(i) = path.rfind('/').filter(|&i| i > 0) {
                client.mkdir(&path[..i], &modes.persistent).await?;
            }
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
) -> Result<(), ZkError> {
    let mode = if ephemeral {
        &modes.ephemeral
    } else {
        &modes.persistent
    };
    match create_with_parents(client, path, &[], mode, modes).await {
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
