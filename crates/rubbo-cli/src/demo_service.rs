//! The service `rubbo demo` runs: `org.rubbo.demo.DemoService`, a few calls that
//! show the shapes (strings, ints, a Java object, a list, a business exception)
//! and `whoami`, which names the provider that answered.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::watch;

use rubbo::{JavaType, RpcError};
use serde::{Deserialize, Serialize};

/// The exception class `fail` throws.
pub(crate) const DEMO_EXCEPTION: &str = "org.rubbo.demo.DemoException";

/// `org.rubbo.demo.User`.
#[derive(Serialize, Deserialize, JavaType, Debug, Clone, PartialEq, Default)]
#[serde(rename = "org.rubbo.demo.User", default)]
pub(crate) struct User {
    /// Id.
    pub(crate) id: i64,
    /// Name.
    pub(crate) name: Option<String>,
}

/// User `i`: id `i`, name `user-i`.
pub(crate) fn demo_user(i: i32) -> User {
    User {
        id: i64::from(i),
        name: Some(format!("user-{i}")),
    }
}

/// `org.rubbo.demo.DemoService` version `1.0.0`.
#[rubbo::service(interface = "org.rubbo.demo.DemoService", version = "1.0.0")]
pub(crate) trait DemoService {
    /// `String echo(String s)`.
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError>;
    /// `int echoInt(int v)`.
    async fn echo_int(&self, v: i32) -> Result<i32, RpcError>;
    /// `User echoUser(User u)`.
    async fn echo_user(&self, u: Option<User>) -> Result<Option<User>, RpcError>;
    /// `List<User> listUsers(int n)`: users `0..n`.
    async fn list_users(&self, n: i32) -> Result<Option<Vec<User>>, RpcError>;
    /// `String fail(String message) throws DemoException`.
    async fn fail(&self, message: Option<String>) -> Result<Option<String>, RpcError>;
    /// `String whoami()`: `<application>@<host>:<port>` of the provider.
    async fn whoami(&self) -> Result<Option<String>, RpcError>;
}

/// The demo provider; clones share the identity and the hold.
#[derive(Debug, Clone, Default)]
pub(crate) struct DemoProvider {
    id: Arc<OnceLock<String>>,
    hold: Arc<Hold>,
}

/// How long a held `whoami` waits at most for its release.
const HOLD_LIMIT: Duration = Duration::from_secs(10);

/// Holds `whoami` calls in the provider, so that a crash finds calls in flight.
#[derive(Debug)]
struct Hold {
    holding: AtomicBool,
    parked: AtomicUsize,
    released: watch::Sender<bool>,
}

impl Default for Hold {
    fn default() -> Self {
        Hold {
            holding: AtomicBool::new(false),
            parked: AtomicUsize::new(0),
            released: watch::Sender::new(false),
        }
    }
}

impl DemoProvider {
    /// Sets the `whoami` answer once the bound port is known (first call wins).
    pub(crate) fn set_identity(&self, application: &str, host: &str, port: u16) {
        let _ = self.id.set(format!("{application}@{host}:{port}"));
    }

    /// From now on `whoami` calls stay in the provider (up to 10 s) until
    /// [`release`](Self::release): they are in flight when it crashes.
    pub(crate) fn hold(&self) {
        self.hold.holding.store(true, Ordering::SeqCst);
    }

    /// How many `whoami` calls are being held.
    pub(crate) fn held(&self) -> usize {
        self.hold.parked.load(Ordering::SeqCst)
    }

    /// Lets the held calls finish (their answers go nowhere once the sockets are gone).
    pub(crate) fn release(&self) {
        self.hold.released.send_replace(true);
    }
}

impl DemoService for DemoProvider {
    async fn echo(&self, s: Option<String>) -> Result<Option<String>, RpcError> {
        Ok(s)
    }
    async fn echo_int(&self, v: i32) -> Result<i32, RpcError> {
        Ok(v)
    }
    async fn echo_user(&self, u: Option<User>) -> Result<Option<User>, RpcError> {
        Ok(u)
    }
    async fn list_users(&self, n: i32) -> Result<Option<Vec<User>>, RpcError> {
        Ok(Some((0..n.max(0)).map(demo_user).collect()))
    }
    async fn fail(&self, message: Option<String>) -> Result<Option<String>, RpcError> {
        Err(RpcError::biz(DEMO_EXCEPTION, message))
    }
    async fn whoami(&self) -> Result<Option<String>, RpcError> {
        if self.hold.holding.load(Ordering::SeqCst) {
            let mut released = self.hold.released.subscribe();
            self.hold.parked.fetch_add(1, Ordering::SeqCst);
            let _ = tokio::time::timeout(HOLD_LIMIT, released.wait_for(|r| *r)).await;
        }
        Ok(self.id.get().cloned())
    }
}
