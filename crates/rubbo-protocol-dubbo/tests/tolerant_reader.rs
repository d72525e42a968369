//! Request bodies that Java's `DecodeableRpcInvocation` accepts but no Java consumer
//! writes (null attachment values, a null dubbo version), and bodies it rejects,
//! written by hand and sent in hand-made frames to a real server on 127.0.0.1.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use parking_lot::Mutex;
use rubbo_common::{
    Attachments, Exporter, Invocation, InvokeFuture, Invoker, Payload, Protocol, RpcResult, Url,
    Value,
};
use rubbo_hessian2::{Decoder, Encoder};
use rubbo_protocol_dubbo::DubboProtocol;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const IFACE: &str = "org.rubbo.interop.InteropService";

/// Echoes its string argument and keeps the attachments each call brought.
#[derive(Debug)]
struct Recorder {
    url: Url,
    seen: Arc<Mutex<Vec<Attachments>>>,
}

impl Invoker for Recorder {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        self.seen.lock().push(inv.attachments().clone());
        Box::pin(async move {
            let (s,): (String,) = inv.arguments().decode()?;
            Ok(RpcResult::value(Payload::typed(s)))
        })
    }
    fn url(&self) -> &Url {
        &self.url
    }
}

async fn provider(
    protocol: &DubboProtocol,
) -> (Box<dyn Exporter>, u16, Arc<Mutex<Vec<Attachments>>>) {
    let url = Url::parse(&format!(
        "dubbo://127.0.0.1:0/{IFACE}?version=1.0.0&side=provider"
    ))
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let exporter = protocol
        .export(Arc::new(Recorder {
            url,
            seen: seen.clone(),
        }))
        .await
        .unwrap();
    let port = protocol.server_addr("127.0.0.1:0").unwrap().port();
    (exporter, port, seen)
}

/// `echo("hi")` with `dubbo_version` and the attachment `entries`, as a body.
fn echo_body(dubbo_version: Value, method: Value, entries: &[(&str, Value)]) -> Vec<u8> {
    let mut out = BytesMut::new();
    let mut enc = Encoder::new(&mut out);
    for v in [
        dubbo_version,
        Value::from(IFACE),
        Value::from("1.0.0"),
        method,
        Value::from("Ljava/lang/String;"),
        Value::from("hi"),
    ] {
        enc.write_value(&v).unwrap();
    }
    enc.write_map_start(None).unwrap();
    for (k, v) in entries {
        enc.write_string(k).unwrap();
        enc.write_value(v).unwrap();
    }
    enc.write_end().unwrap();
    out.to_vec()
}

/// Sends `body` as two-way request 7 (hessian2) and returns the response's status
/// and body.
async fn exchange(port: u16, body: &[u8]) -> (u8, Vec<u8>) {
    let mut frame = vec![0xda, 0xbb, 0xc2, 0];
    frame.extend_from_slice(&7u64.to_be_bytes());
    frame.extend_from_slice(&u32::try_from(body.len()).unwrap().to_be_bytes());
    frame.extend_from_slice(body);
    let io = async {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await?;
        s.write_all(&frame).await?;
        let mut head = [0u8; 16];
        s.read_exact(&mut head).await?;
        assert_eq!(&head[..2], &[0xda, 0xbb]);
        assert_eq!(&head[4..12], &7u64.to_be_bytes(), "the request's id");
        let len = u32::from_be_bytes([head[12], head[13], head[14], head[15]]);
        let mut body = vec![0; len as usize];
        s.read_exact(&mut body).await?;
        Ok::<_, std::io::Error>((head[3], body))
    };
    tokio::time::timeout(Duration::from_secs(5), io)
        .await
        .expect("no answer within 5 s")
        .unwrap()
}

const STANDARD: [(&str, &str); 3] = [("path", IFACE), ("version", "1.0.0"), ("timeout", "3000")];

fn standard() -> Vec<(&'static str, Value)> {
    STANDARD
        .iter()
        .map(|(k, v)| (*k, Value::from(*v)))
        .collect()
}

#[tokio::test]
async fn null_group_and_null_user_values_are_served() {
    let server = DubboProtocol::new();
    let (_exp, port, seen) = provider(&server).await;
    let mut entries = standard();
    entries.push(("group", Value::Null));
    entries.push(("trace-id", Value::Null));
    entries.push(("count", Value::Int(3)));
    let (status, body) = exchange(
        port,
        &echo_body(Value::from("2.0.2"), Value::from("echo"), &entries),
    )
    .await;
    assert_eq!(status, 20, "{}", String::from_utf8_lossy(&body));
    let mut d = Decoder::new(&body);
    assert_eq!(d.read_int().unwrap(), 4, "a value, with attachments");
    assert_eq!(d.read_string().unwrap(), "hi");
    let seen = seen.lock();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].get("trace-id"), Some(&Value::Null));
    assert_eq!(seen[0].get("count"), Some(&Value::Int(3)));
    assert!(!seen[0].contains_key("group"), "{:?}", seen[0]);
}

#[tokio::test]
async fn a_null_dubbo_version_is_served_without_response_attachments() {
    let server = DubboProtocol::new();
    let (_exp, port, _) = provider(&server).await;
    let (status, body) = exchange(
        port,
        &echo_body(Value::Null, Value::from("echo"), &standard()),
    )
    .await;
    assert_eq!(status, 20, "{}", String::from_utf8_lossy(&body));
    let mut d = Decoder::new(&body);
    assert_eq!(d.read_int().unwrap(), 1, "a value, no attachments");
    assert_eq!(d.read_string().unwrap(), "hi");
    assert!(d.is_empty());
}

#[tokio::test]
async fn a_method_name_that_is_no_string_is_a_bad_request() {
    let server = DubboProtocol::new();
    let (_exp, port, seen) = provider(&server).await;
    let method = Value::List(rubbo_hessian2::List {
        type_name: None,
        items: vec![Value::from("echo")],
    });
    let (status, body) =
        exchange(port, &echo_body(Value::from("2.0.2"), method, &standard())).await;
    assert_eq!(status, 40);
    let text = Decoder::new(&body).read_string().unwrap();
    assert_eq!(
        text,
        "Fail to decode request due to: the method name is not a string (found list)"
    );
    assert!(seen.lock().is_empty(), "the service was not called");
}
