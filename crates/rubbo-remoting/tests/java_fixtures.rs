//! Byte compatibility with frames captured from Apache Dubbo 3.3.6
//! (`interop/fixtures/dubbo`, see its README): decode them, re-encode them, and
//! check our server and client put the same bytes on the wire as Java did.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use rubbo_remoting::*;
use support::*;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../interop/fixtures/dubbo")
}

/// (name, request frame, response frame) for every captured pair.
fn pairs() -> Vec<(String, Bytes, Bytes)> {
    let mut names: Vec<String> = std::fs::read_dir(fixture_dir())
        .expect("interop/fixtures/dubbo exists")
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".request.bin").map(str::to_owned)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 20, "fixtures found: {names:?}");
    names
        .into_iter()
        .map(|n| {
            let read = |kind: &str| {
                Bytes::from(std::fs::read(fixture_dir().join(format!("{n}.{kind}.bin"))).unwrap())
            };
            let (req, resp) = (read("request"), read("response"));
            (n, req, resp)
        })
        .collect()
}

fn decode_one(wire: &Bytes) -> Decoded {
    let mut buf = BytesMut::from(&wire[..]);
    let mut d = Decoder::new(rubbo_common::keys::Payload::DEFAULT);
    let got = d.decode(&mut buf).unwrap().expect("one whole frame");
    assert!(buf.is_empty(), "frame length matches file length");
    got
}

fn reencode(d: &Decoded) -> BytesMut {
    match d.clone() {
        Decoded::Request(r) => frame_bytes(Frame::Request(r)),
        Decoded::Response(r) => frame_bytes(Frame::Response(r)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn java_frames_decode_and_reencode_byte_for_byte() {
    for (name, req, resp) in pairs() {
        let dreq = decode_one(&req);
        let Decoded::Request(r) = &dreq else {
            panic!("{name}: {dreq:?}")
        };
        assert!(r.two_way, "{name}");
        assert_eq!(r.serialization, HESSIAN2, "{name}");
        assert_eq!(r.event, name.ends_with("heartbeat"), "{name}");
        assert_eq!(&reencode(&dreq)[..], &req[..], "{name} request");

        let dresp = decode_one(&resp);
        let Decoded::Response(p) = &dresp else {
            panic!("{name}: {dresp:?}")
        };
        assert_eq!(p.id, r.id, "{name}: response echoes the id");
        assert_eq!(p.event, r.event, "{name}");
        assert_eq!(&reencode(&dresp)[..], &resp[..], "{name} response");
        let want_status = match name.as_str() {
            "unknown_service" | "unknown_method" | "unknown_version" | "wrong_descriptor" => {
                Status::BAD_REQUEST
            }
            "unexported_version" => Status::SERVICE_ERROR,
            _ => Status::OK,
        };
        assert_eq!(p.status, want_status, "{name}");
        if r.event {
            assert!(r.is_heartbeat());
            assert_eq!(
                p,
                &Response::heartbeat(r),
                "{name}: our heartbeat reply is Java's"
            );
        }
    }
}

#[test]
fn java_error_texts_match_our_hessian2_string_writer() {
    let mut checked = 0;
    for (name, _, resp) in pairs() {
        let Decoded::Response(p) = decode_one(&resp) else {
            unreachable!()
        };
        if p.status == Status::BAD_REQUEST {
            // body = one hessian string; re-encode its text and compare
            let text = match p.body[0] {
                0..=31 => std::str::from_utf8(&p.body[1..]).unwrap().to_owned(),
                0x30..=0x33 => std::str::from_utf8(&p.body[2..]).unwrap().to_owned(),
                other => panic!("{name}: tag {other:#x}"),
            };
            assert_eq!(hessian2_error_body(2, &text), p.body, "{name}");
            checked += 1;
        }
    }
    assert!(checked >= 4, "{checked} status-40 bodies");
}

/// Our server, fed the Java consumer's request frames in one write, answers with
/// frames identical to the Java provider's (the handler returns the captured bodies;
/// heartbeats are answered by the server itself).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_server_writes_java_provider_frames() {
    let pairs = pairs();
    let mut answers: HashMap<Bytes, Response> = HashMap::new();
    let mut requests = BytesMut::new();
    let mut expected = BytesMut::new();
    for (_, req, resp) in &pairs {
        let (Decoded::Request(r), Decoded::Response(p)) = (decode_one(req), decode_one(resp))
        else {
            unreachable!()
        };
        if !r.event {
            answers.insert(r.body.clone(), p);
        }
        requests.extend_from_slice(req);
        expected.extend_from_slice(resp);
    }
    // replay_echo repeats echo's request: answers are keyed by body, responses by id
    let answers = Arc::new(answers);
    let handler = handler_fn(move |req: Request, _c: ConnectionInfo| {
        let answers = answers.clone();
        async move {
            let mut resp = answers.get(&req.body).expect("known request").clone();
            resp.id = req.id;
            Some(resp)
        }
    });
    let server = Server::bind(
        "127.0.0.1:0",
        ServerConfig::default().with_dispatch(Dispatch::Direct),
        handler,
    )
    .await
    .unwrap();
    let mut raw = TcpStream::connect(server.local_addr()).await.unwrap();
    raw.write_all(&requests).await.unwrap();
    let mut got = vec![0u8; expected.len()];
    bounded("all responses", LONG, raw.read_exact(&mut got))
        .await
        .unwrap();
    // direct dispatch keeps the order, so the byte streams are equal
    assert_eq!(got, &expected[..]);
}

/// Our client writes the Java consumer's request frames (all but the id, which
/// comes from our counter) and hands back the Java provider's response unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_writes_java_consumer_frames() {
    let pairs: Vec<_> = pairs()
        .into_iter()
        .filter(|(n, _, _)| !n.ends_with("heartbeat"))
        .collect();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let expected = pairs.clone();
    let provider = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut decoder = Decoder::new(0);
        let mut buf = BytesMut::new();
        for (name, req, resp) in expected {
            let got = read_decoded(&mut s, &mut decoder, &mut buf).await.unwrap();
            let Decoded::Request(ours) = got else {
                panic!("{got:?}")
            };
            let ours_wire = frame_bytes(Frame::Request(ours.clone()));
            // identical except bytes 4..12 (the id)
            assert_eq!(&ours_wire[..4], &req[..4], "{name}");
            assert_eq!(&ours_wire[12..], &req[12..], "{name}");
            let mut reply = BytesMut::from(&resp[..]);
            reply[4..12].copy_from_slice(&ours.id.to_be_bytes());
            s.write_all(&reply).await.unwrap();
        }
    });
    let client = ExchangeClient::connect(&addr, client_config())
        .await
        .unwrap();
    for (name, req, resp) in &pairs {
        let Decoded::Request(r) = decode_one(req) else {
            unreachable!()
        };
        let Decoded::Response(want) = decode_one(resp) else {
            unreachable!()
        };
        let got = client
            .request(r.body.clone(), r.serialization, LONG)
            .await
            .unwrap();
        assert_eq!(
            (got.status, got.event, got.serialization),
            (want.status, false, 2),
            "{name}"
        );
        assert_eq!(got.body, want.body, "{name}");
    }
    bounded("provider done", LONG, provider).await.unwrap();
}
