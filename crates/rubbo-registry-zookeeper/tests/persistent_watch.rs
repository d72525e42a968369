//! Categories watched with a persistent recursive watch (`zk.watch=persistent`, the
//! default on ZooKeeper 3.6+) against the one-shot child watch (`zk.watch=oneshot`):
//! changes, garbage, reconnections and restarts.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rubbo_common::Url;
use rubbo_registry::{Registry, RegistryError, is_empty_url, subscribe_url};
use rubbo_registry_zookeeper::{ZookeeperRegistry, paths};
use support::{Recorder, ZkServer, init_tracing, wait_until};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use zookeeper_client::{Acls, Client, CreateMode};

const IFACE: &str = "org.rubbo.interop.EchoService";
const WAIT: Duration = Duration::from_secs(30);

fn provider(port: u16) -> Url {
    Url::parse(&format!(
        "dubbo://127.0.0.1:{port}/{IFACE}?application=p&interface={IFACE}&side=provider"
    ))
    .unwrap()
}

fn consumer() -> Url {
    subscribe_url(
        &Url::parse(&format!(
            "consumer://127.0.0.1/{IFACE}?interface={IFACE}&side=consumer"
        ))
        .unwrap(),
    )
}

fn node(group: &str, port: u16) -> String {
    paths::url_path(&format!("/{group}"), &provider(port))
}

/// Requests the server received on the connection of `session` (from `cons`).
fn received(server: &ZkServer, session: &str) -> Option<u64> {
    let cons = server.four_letter("cons")?;
    let line = cons
        .lines()
        .find(|l| l.contains(&format!("sid={session},")))?;
    let at = line.find("recved=")? + "recved=".len();
    line[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Registers ten providers one by one (each seen by the consumer before the next) and
/// returns how many requests the consumer's connection sent meanwhile, and the time.
async fn requests_for_ten_changes(server: &ZkServer, mode: &str) -> (u64, Duration) {
    let group = format!("t_requests_{mode}");
    let url = server.registry_url(&format!(
        "group={group}&session=20000&timeout=20000&notify.delay=0&zk.watch={mode}"
    ));
    let p = ZookeeperRegistry::connect(url.clone()).await.unwrap();
    let c = ZookeeperRegistry::connect(url).await.unwrap();
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    assert!(rec.providers().is_empty());
    let session = c.client().unwrap().session_id().to_string();
    let before = received(server, &session).expect("consumer connection in `cons`");
    let start = Instant::now();
    let mut want = Vec::new();
    for i in 0..10 {
        p.register(provider(20880 + i)).await.unwrap();
        want.push(format!("127.0.0.1:{}", 20880 + i));
        let want: Vec<&str> = want.iter().map(String::as_str).collect();
        rec.wait_providers(&want, WAIT).await;
    }
    let elapsed = start.elapsed();
    let after = received(server, &session).expect("consumer connection in `cons`");
    p.destroy().await;
    rec.wait_providers(&[], WAIT).await;
    c.destroy().await;
    (after - before, elapsed)
}

#[tokio::test]
async fn persistent_watch_sends_no_request_per_change_and_oneshot_lists_again() {
    init_tracing();
    let server = ZkServer::start();
    let (persistent, t) = requests_for_ten_changes(&server, "persistent").await;
    // Only pings (every 20 s / 3 at most) besides the events.
    let pings = 2 + t.as_secs() / 6;
    assert!(
        persistent <= pings,
        "persistent watch: {persistent} requests for 10 changes in {t:?}"
    );
    let (oneshot, t) = requests_for_ten_changes(&server, "oneshot").await;
    assert!(
        oneshot >= 10,
        "one-shot watch lists after every change: {oneshot} requests in {t:?}"
    );
}

#[tokio::test]
async fn each_created_and_deleted_provider_reaches_the_listener() {
    init_tracing();
    let server = ZkServer::start();
    for mode in ["persistent", "oneshot"] {
        let group = format!("t_changes_{mode}");
        let url = server.registry_url(&format!(
            "group={group}&session=4000&timeout=20000&zk.watch={mode}"
        ));
        let p = ZookeeperRegistry::connect(url.clone()).await.unwrap();
        let c = ZookeeperRegistry::connect(url).await.unwrap();
        p.register(provider(20880)).await.unwrap();
        let (rec, l) = Recorder::new();
        c.subscribe(consumer(), l).await.unwrap();
        assert_eq!(rec.providers(), ["127.0.0.1:20880"], "{mode}");
        p.register(provider(20881)).await.unwrap();
        rec.wait_providers(&["127.0.0.1:20880", "127.0.0.1:20881"], WAIT)
            .await;
        p.unregister(provider(20880)).await.unwrap();
        rec.wait_providers(&["127.0.0.1:20881"], WAIT).await;
        p.unregister(provider(20881)).await.unwrap();
        rec.wait_providers(&[], WAIT).await;
        let last = rec.last("providers").unwrap();
        assert!(
            is_empty_url(&last[0]),
            "{mode}: empty:// after the last one"
        );
        // Back again.
        p.register(provider(20880)).await.unwrap();
        rec.wait_providers(&["127.0.0.1:20880"], WAIT).await;
        p.destroy().await;
        c.destroy().await;
    }
}

#[tokio::test]
async fn garbage_and_deeper_nodes_are_skipped_by_the_persistent_watch() {
    init_tracing();
    let server = ZkServer::start();
    let url = server.registry_url("group=t_garbage&session=4000&timeout=20000&zk.watch=persistent");
    let p = ZookeeperRegistry::connect(url.clone()).await.unwrap();
    let c = ZookeeperRegistry::connect(url).await.unwrap();
    let zk = Client::connect(&server.address()).await.unwrap();
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    p.register(provider(20880)).await.unwrap();
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    assert_eq!(rec.providers(), ["127.0.0.1:20880"]);
    let dir = "/t_garbage/org.rubbo.interop.EchoService/providers";
    // A garbage child, a node below a child (deeper: not a provider), a data change.
    zk.create(&format!("{dir}/not%ZZa-url"), &[], &persistent)
        .await
        .unwrap();
    zk.create(&format!("{dir}/not%ZZa-url/deeper"), &[], &persistent)
        .await
        .unwrap();
    zk.set_data(&node("t_garbage", 20880), b"x", None)
        .await
        .unwrap();
    p.register(provider(20881)).await.unwrap();
    rec.wait_providers(&["127.0.0.1:20880", "127.0.0.1:20881"], WAIT)
        .await;
    zk.delete(&format!("{dir}/not%ZZa-url/deeper"), None)
        .await
        .unwrap();
    zk.delete(&format!("{dir}/not%ZZa-url"), None)
        .await
        .unwrap();
    p.unregister(provider(20880)).await.unwrap();
    rec.wait_providers(&["127.0.0.1:20881"], WAIT).await;
    assert!(
        rec.seen
            .lock()
            .iter()
            .filter(|l| rubbo_registry::category_of(&l[0]) == "providers")
            .all(|l| !is_empty_url(&l[0]) && l.len() <= 2),
        "garbage never emptied or grew the list: {:?}",
        rec.seen.lock()
    );
    p.destroy().await;
    c.destroy().await;
}

#[tokio::test]
async fn unknown_watch_mode_is_a_config_error() {
    let url = Url::parse("zookeeper://127.0.0.1:1?zk.watch=sometimes&timeout=100").unwrap();
    let e = ZookeeperRegistry::connect(url).await.unwrap_err();
    assert!(matches!(e, RegistryError::Config(_)), "{e}");
}

/// A TCP proxy to ZooKeeper whose connections can be cut and refused for a while.
struct Proxy {
    port: u16,
    open: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: JoinHandle<()>,
}

impl Proxy {
    async fn start(target: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = Arc::new(AtomicBool::new(true));
        let conns: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accept = tokio::spawn({
            let (open, conns) = (open.clone(), conns.clone());
            async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    if !open.load(Ordering::SeqCst) {
                        continue; // dropped: the connection is refused
                    }
                    let target = target.clone();
                    conns.lock().push(tokio::spawn(async move {
                        if let Ok(mut outbound) = TcpStream::connect(&target).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    }));
                }
            }
        });
        Proxy {
            port,
            open,
            conns,
            accept,
        }
    }

    /// Closes every connection and refuses new ones.
    fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        for c in self.conns.lock().drain(..) {
            c.abort();
        }
    }

    fn heal(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.cut();
        self.accept.abort();
    }
}

/// Providers come and go while the consumer is disconnected (same session): the
/// events are not delivered on reconnection (ZOOKEEPER-4698), the list read again is.
#[tokio::test]
async fn changes_while_the_consumer_is_disconnected_are_seen_after_it_reconnects() {
    init_tracing();
    let server = ZkServer::start();
    let proxy = Proxy::start(server.address()).await;
    let direct = server.registry_url("group=t_cut&session=20000&timeout=20000");
    let p = ZookeeperRegistry::connect(direct).await.unwrap();
    let url = Url::parse(&format!(
        "zookeeper://127.0.0.1:{}?group=t_cut&session=20000&timeout=20000&zk.watch=persistent",
        proxy.port
    ))
    .unwrap();
    let c = ZookeeperRegistry::connect(url).await.unwrap();
    p.register(provider(20880)).await.unwrap();
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    assert_eq!(rec.providers(), ["127.0.0.1:20880"]);
    let session = c.client().unwrap().session_id();

    proxy.cut();
    wait_until("consumer disconnected", WAIT, || async {
        !c.is_available()
    })
    .await;
    p.register(provider(20881)).await.unwrap();
    p.unregister(provider(20880)).await.unwrap();
    proxy.heal();
    rec.wait_providers(&["127.0.0.1:20881"], WAIT).await;
    assert_eq!(
        c.client().unwrap().session_id(),
        session,
        "the same session: a reconnection, not a new session"
    );
    // And the watch works again after the reconnection.
    p.register(provider(20882)).await.unwrap();
    rec.wait_providers(&["127.0.0.1:20881", "127.0.0.1:20882"], WAIT)
        .await;
    p.destroy().await;
    rec.wait_providers(&[], WAIT).await;
    c.destroy().await;
}

/// ZooKeeper restarted (data kept) under a consumer: a provider added right after the
/// restart, while the consumer may still be reconnecting, is seen, and so are later
/// ones. (An outage longer than the session, a new session: `restart.rs`, which runs
/// with the default, persistent watches.)
#[tokio::test]
async fn zookeeper_restarted_under_a_persistent_watch_resyncs() {
    init_tracing();
    let mut server = ZkServer::start();
    let url = server.registry_url("group=t_restart&session=4000&timeout=20000&zk.watch=persistent");
    let c = ZookeeperRegistry::connect(url).await.unwrap();
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    {
        let zk = Client::connect(&server.address()).await.unwrap();
        zk.mkdir(
            "/t_restart/org.rubbo.interop.EchoService/providers",
            &persistent,
        )
        .await
        .unwrap();
        zk.create(&node("t_restart", 20880), &[], &persistent)
            .await
            .unwrap();
    }
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    assert_eq!(rec.providers(), ["127.0.0.1:20880"]);
    let session = c.client().unwrap().session_id();

    server.restart();
    let zk = Client::connect(&server.address()).await.unwrap();
    zk.create(&node("t_restart", 20881), &[], &persistent)
        .await
        .unwrap();
    zk.delete(&node("t_restart", 20880), None).await.unwrap();
    rec.wait_providers(&["127.0.0.1:20881"], WAIT).await;
    wait_until("consumer reconnected", WAIT, || async { c.is_available() }).await;
    assert_eq!(c.client().unwrap().session_id(), session);
    zk.create(&node("t_restart", 20882), &[], &persistent)
        .await
        .unwrap();
    rec.wait_providers(&["127.0.0.1:20881", "127.0.0.1:20882"], WAIT)
        .await;

    c.destroy().await;
}

/// A proxy to ZooKeeper that answers `addWatch` as a 3.4/3.5 server does: error
/// `UNIMPLEMENTED` (-6), then the connection is closed. Counts the `addWatch` requests.
struct OldServer {
    port: u16,
    add_watches: Arc<AtomicI64>,
    accept: JoinHandle<()>,
}

const ADD_WATCH: i32 = 106;
const UNIMPLEMENTED: i32 = -6;

async fn read_frame(r: &mut (impl AsyncRead + Unpin)) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).await.ok()?;
    let n = usize::try_from(i32::from_be_bytes(len)).ok()?;
    let mut frame = len.to_vec();
    frame.resize(4 + n, 0);
    r.read_exact(&mut frame[4..]).await.ok()?;
    Some(frame)
}

impl OldServer {
    async fn start(target: String) -> OldServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let add_watches = Arc::new(AtomicI64::new(0));
        let count = add_watches.clone();
        let accept = tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Ok(outbound) = TcpStream::connect(&target).await else {
                    continue;
                };
                let count = count.clone();
                tokio::spawn(async move {
                    let (mut cr, cw) = inbound.into_split();
                    let (mut sr, mut sw) = outbound.into_split();
                    let cw = Arc::new(tokio::sync::Mutex::new(cw));
                    let zxid = Arc::new(AtomicI64::new(0));
                    let down = tokio::spawn({
                        let (cw, zxid) = (cw.clone(), zxid.clone());
                        async move {
                            let mut first = true;
                            while let Some(frame) = read_frame(&mut sr).await {
                                if !first && frame.len() >= 16 {
                                    let z = i64::from_be_bytes(frame[8..16].try_into().unwrap());
                                    zxid.fetch_max(z, Ordering::SeqCst);
                                }
                                first = false;
                                if cw.lock().await.write_all(&frame).await.is_err() {
                                    break;
                                }
                            }
                        }
                    });
                    // The connect request has no request header.
                    let mut first = true;
                    while let Some(frame) = read_frame(&mut cr).await {
                        if !first && frame.len() >= 12 {
                            let op = i32::from_be_bytes(frame[8..12].try_into().unwrap());
                            if op == ADD_WATCH {
                                count.fetch_add(1, Ordering::SeqCst);
                                let mut reply = 16i32.to_be_bytes().to_vec();
                                reply.extend_from_slice(&frame[4..8]); // xid
                                reply.extend_from_slice(&zxid.load(Ordering::SeqCst).to_be_bytes());
                                reply.extend_from_slice(&UNIMPLEMENTED.to_be_bytes());
                                let _ = cw.lock().await.write_all(&reply).await;
                                break; // and close, as the server does
                            }
                        }
                        first = false;
                        if sw.write_all(&frame).await.is_err() {
                            break;
                        }
                    }
                    down.abort();
                });
            }
        });
        OldServer {
            port,
            add_watches,
            accept,
        }
    }
}

impl Drop for OldServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// `zk.watch=auto` (the default) against a server without persistent watches falls back
/// to one-shot watches: the subscription works, sees changes, and later subscriptions
/// do not ask again.
#[tokio::test]
async fn a_server_without_persistent_watches_gets_one_shot_watches() {
    init_tracing();
    let server = ZkServer::start();
    let old = OldServer::start(server.address()).await;
    let direct = server.registry_url("group=t_old&session=20000&timeout=20000");
    let p = ZookeeperRegistry::connect(direct).await.unwrap();
    p.register(provider(20880)).await.unwrap();
    let url = Url::parse(&format!(
        "zookeeper://127.0.0.1:{}?group=t_old&session=20000&timeout=20000",
        old.port
    ))
    .unwrap();
    let c = ZookeeperRegistry::connect(url).await.unwrap();
    let (rec, l) = Recorder::new();
    c.subscribe(consumer(), l).await.unwrap();
    assert_eq!(rec.providers(), ["127.0.0.1:20880"]);
    let asked = old.add_watches.load(Ordering::SeqCst);
    assert!(asked >= 1, "addWatch was tried");
    p.register(provider(20881)).await.unwrap();
    rec.wait_providers(&["127.0.0.1:20880", "127.0.0.1:20881"], WAIT)
        .await;
    p.unregister(provider(20880)).await.unwrap();
    rec.wait_providers(&["127.0.0.1:20881"], WAIT).await;
    // Another subscription of the same registry goes straight to one-shot watches.
    let (rec2, l2) = Recorder::new();
    c.subscribe(consumer(), l2).await.unwrap();
    assert_eq!(rec2.providers(), ["127.0.0.1:20881"]);
    assert_eq!(old.add_watches.load(Ordering::SeqCst), asked);
    p.destroy().await;
    rec.wait_providers(&[], WAIT).await;
    c.destroy().await;
}
