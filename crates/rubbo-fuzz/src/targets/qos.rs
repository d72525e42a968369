//! The QoS port's decoders, telnet command lines and HTTP requests (told apart by the
//! first byte), over an in-memory connection: every input gets its answer and the
//! connection ends, in bounded time.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rubbo_qos::{
    ConfigSection, ConsumerService, ProviderService, Qos, QosConfig, QosError, QosHost,
    Registration, RegistryScope, ServerInfo,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::runtime::Runtime;

/// How long one connection may take to answer and end.
const CONNECTION_DEADLINE: Duration = Duration::from_secs(3);

/// One provider; every action succeeds and changes nothing.
#[derive(Debug)]
struct Host;

impl QosHost for Host {
    fn application(&self) -> String {
        "app".into()
    }
    fn providers(&self) -> Vec<ProviderService> {
        vec![ProviderService::new(
            "org.example.Greeter",
            None,
            Some("1.0.0"),
            vec![Registration {
                registry: "memory".into(),
                application_level: false,
                registered: true,
            }],
        )]
    }
    fn consumers(&self) -> Vec<ConsumerService> {
        Vec::new()
    }
    fn set_registered<'a>(
        &'a self,
        _: &'a [String],
        _: RegistryScope,
        _: bool,
    ) -> BoxFuture<'a, Result<(), QosError>> {
        Box::pin(async { Ok(()) })
    }
    fn servers(&self) -> Vec<ServerInfo> {
        Vec::new()
    }
    fn started(&self) -> bool {
        true
    }
    fn deployed(&self) -> bool {
        true
    }
    fn config(&self) -> Vec<ConfigSection> {
        Vec::new()
    }
    fn version(&self) -> String {
        "1.0.0".into()
    }
    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

const SEEDS: &[&str] = &[
    "help\r\nls\r\nps\r\nversion\r\nquit\r\n",
    "online org.example.Greeter\r\noffline\r\nready\r\nstartup\r\nlive\r\n",
    "getConfig\r\nserializeCheckStatus\r\nselectEnv\r\ncount org.example.Greeter sayHello\r\n",
    "GET /ls HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "GET /online?service=org.example.Greeter HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "POST /offline HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 27\r\n\r\nservice=org.example.Greeter",
];

/// Line ends, quoting, query syntax, HTTP heads and telnet controls.
pub const DICT: &[&[u8]] = &[
    b"\r\n",
    b"\n",
    b" ",
    b"\"",
    b"\\",
    b"%",
    b"?",
    b"&",
    b"=",
    b"GET /",
    b"HTTP/1.1\r\n",
    b"Content-Length: 99999999999\r\n",
    b"Transfer-Encoding: chunked\r\n",
    b"\x04",
    b"\x03",
    b"\xff\xf4",
];

/// Telnet sessions and HTTP requests.
pub fn seeds() -> Vec<Vec<u8>> {
    crate::seeds::texts(SEEDS)
}

thread_local! {
    /// A runtime and a QoS server per fuzzing thread, built on first use.
    static SERVER: (Runtime, Qos) = {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        (rt, Qos::new(Arc::new(Host), QosConfig::default()))
    };
}

/// One connection that sends `input`, half-closes and reads to the end: the server
/// answers and ends it within [`CONNECTION_DEADLINE`].
pub fn connection(input: &[u8]) {
    let ended = SERVER.with(|(rt, qos)| {
        rt.block_on(async {
            tokio::time::timeout(CONNECTION_DEADLINE, async {
                let (mut client, server) = tokio::io::duplex(64 * 1024);
                let serve = qos.serve_connection(server, IpAddr::V4(Ipv4Addr::LOCALHOST));
                let talk = async {
                    let _ = client.write_all(input).await;
                    let _ = client.shutdown().await;
                    let mut out = Vec::new();
                    let _ = client.read_to_end(&mut out).await;
                };
                let (_, served) = tokio::join!(talk, serve);
                served
            })
            .await
        })
    });
    assert!(ended.is_ok(), "the connection did not end");
}
