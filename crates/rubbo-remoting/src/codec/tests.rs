//! Byte-exact vectors from the wire reference (section 2.5) and framing tests.

use bytes::{Bytes, BytesMut};

use super::*;

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

fn encode(frame: &Frame) -> Vec<u8> {
    let mut buf = BytesMut::new();
    encode_frame(frame, &mut buf);
    buf.to_vec()
}

fn decode_all(d: &mut Decoder, buf: &mut BytesMut) -> Vec<Decoded> {
    let mut out = Vec::new();
    while let Some(f) = d.decode(buf).unwrap() {
        out.push(f);
    }
    out
}

#[test]
fn heartbeat_request_vector() {
    let wire = hex("da bb e2 00 00 00 00 00 00 00 00 07 00 00 00 01 4e");
    assert_eq!(encode(&Frame::Request(Request::heartbeat(7))), wire);
    let mut d = Decoder::new(8 << 20);
    let got = decode_all(&mut d, &mut BytesMut::from(&wire[..]));
    let [Decoded::Request(req)] = &got[..] else {
        panic!("{got:?}")
    };
    assert!(req.is_heartbeat() && req.two_way && req.event);
    assert_eq!((req.id, req.serialization), (7, HESSIAN2));
}

#[test]
fn heartbeat_response_vector() {
    let wire = hex("da bb 22 14 00 00 00 00 00 00 00 07 00 00 00 01 4e");
    let resp = Response::heartbeat(&Request::heartbeat(7));
    assert_eq!(encode(&Frame::Response(resp.clone())), wire);
    let got = decode_all(&mut Decoder::new(0), &mut BytesMut::from(&wire[..]));
    assert_eq!(got, vec![Decoded::Response(resp)]);
}

#[test]
fn readonly_event_vector() {
    let id = 0x0102_0304_0506_0708;
    let wire = hex("da bb a2 00 01 02 03 04 05 06 07 08 00 00 00 02 01 52");
    let req = Request::readonly(id);
    assert_eq!(encode(&Frame::Request(req.clone())), wire);
    assert!(req.is_readonly_event() && !req.is_heartbeat() && !req.two_way);
    let got = decode_all(&mut Decoder::new(0), &mut BytesMut::from(&wire[..]));
    assert_eq!(got, vec![Decoded::Request(req)]);
    let w = encode(&Frame::Request(Request::writable(1)));
    assert_eq!(&w[2..3], &[0xa2]);
    assert_eq!(&w[16..], &[0x01, 0x57]);
}

#[test]
fn request_and_response_header_vectors() {
    let req = hex("da bb c2 00 00 00 00 00 00 00 00 01 00 00 00 e4");
    let h = Header::decode(&req).unwrap().unwrap();
    assert_eq!(h.flag, 0xc2);
    assert!(h.is_request() && h.is_two_way() && !h.is_event());
    assert_eq!((h.id, h.body_len, h.serialization()), (1, 228, 2));
    assert_eq!(
        Request::new(1, 2, Bytes::from(vec![0; 228]))
            .header()
            .to_bytes()[..],
        req[..]
    );
    assert_eq!(
        Request::oneway(1, 2, Bytes::new()).header().flag,
        0x82,
        "one-way request flag"
    );

    let resp = hex("da bb 02 14 00 00 00 00 00 00 00 01 00 00 00 1b");
    let h = Header::decode(&resp).unwrap().unwrap();
    assert!(!h.is_request() && !h.is_event());
    assert_eq!((h.status, h.id, h.body_len), (20, 1, 27));
    let r = Response::ok(1, 2, Bytes::from(vec![0; 27]));
    assert_eq!(r.header().to_bytes()[..], resp[..]);
}

#[test]
fn error_response_vector() {
    // status 40: `da bb 02 28 <id> 00 00 00 22` + `30 20` + 32 bytes of text
    let text = "Data length too large: 1, max: 0";
    assert_eq!(text.len(), 32);
    let body = hessian2_error_body(2, text);
    let r = Response::new(9, 2, Status::BAD_REQUEST, body);
    let wire = encode(&Frame::Response(r));
    assert_eq!(
        &wire[..16],
        &hex("da bb 02 28 00 00 00 00 00 00 00 09 00 00 00 22")[..]
    );
    assert_eq!(&wire[16..18], &[0x30, 0x20]);
    assert_eq!(&wire[18..], text.as_bytes());
}

fn sample_frames() -> Vec<Frame> {
    vec![
        Frame::Request(Request::new(1, 2, Bytes::from_static(b"hello"))),
        Frame::Request(Request::heartbeat(-5)),
        Frame::Response(Response::ok(i64::MAX, 2, Bytes::new())),
        Frame::Request(Request::oneway(i64::MIN, 23, Bytes::from(vec![7u8; 300]))),
        Frame::Response(Response::new(
            3,
            2,
            Status::from(123),
            Bytes::from_static(b"x"),
        )),
        Frame::Request(Request::readonly(4)),
    ]
}

fn as_decoded(f: &Frame) -> Decoded {
    match f.clone() {
        Frame::Request(r) => Decoded::Request(r),
        Frame::Response(r) => Decoded::Response(r),
    }
}

#[test]
fn several_frames_in_one_buffer() {
    let frames = sample_frames();
    let mut buf = BytesMut::new();
    for f in &frames {
        encode_frame(f, &mut buf);
    }
    let got = decode_all(&mut Decoder::new(8 << 20), &mut buf);
    assert_eq!(got, frames.iter().map(as_decoded).collect::<Vec<_>>());
    assert!(buf.is_empty());
}

#[test]
fn split_at_every_byte_boundary() {
    let frames = sample_frames();
    let mut wire = BytesMut::new();
    for f in &frames {
        encode_frame(f, &mut wire);
    }
    let want: Vec<Decoded> = frames.iter().map(as_decoded).collect();
    // two reads, split at every offset
    for cut in 0..=wire.len() {
        let mut d = Decoder::new(8 << 20);
        let mut buf = BytesMut::from(&wire[..cut]);
        let mut got = decode_all(&mut d, &mut buf);
        buf.extend_from_slice(&wire[cut..]);
        got.extend(decode_all(&mut d, &mut buf));
        assert_eq!(got, want, "cut at {cut}");
    }
    // one byte per read
    let mut d = Decoder::new(8 << 20);
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    for b in wire.iter() {
        buf.extend_from_slice(&[*b]);
        got.extend(decode_all(&mut d, &mut buf));
    }
    assert_eq!(got, want);
}

#[test]
fn oversized_request_is_skipped_and_reported_broken() {
    let big = Frame::Request(Request::new(11, 2, Bytes::from(vec![1u8; 100])));
    let next = Frame::Request(Request::new(12, 2, Bytes::from_static(b"ok")));
    let mut wire = BytesMut::new();
    encode_frame(&big, &mut wire);
    encode_frame(&next, &mut wire);
    for cut in 0..=wire.len() {
        let mut d = Decoder::new(64);
        let mut buf = BytesMut::from(&wire[..cut]);
        let mut got = decode_all(&mut d, &mut buf);
        // never buffered: a skipped body leaves the buffer as it arrives
        if (16..=116).contains(&cut) {
            assert!(buf.is_empty(), "cut {cut}: {} bytes buffered", buf.len());
        }
        buf.extend_from_slice(&wire[cut..]);
        got.extend(decode_all(&mut d, &mut buf));
        let broken = Request {
            body: Bytes::new(),
            broken: Some(BrokenRequest::PayloadTooLarge { len: 100, max: 64 }),
            ..Request::new(11, 2, Bytes::new())
        };
        assert_eq!(
            got,
            vec![Decoded::Request(broken), as_decoded(&next)],
            "cut {cut}"
        );
    }
    assert_eq!(
        BrokenRequest::PayloadTooLarge { len: 100, max: 64 }.to_string(),
        "Data length too large: 100, max payload: 64"
    );
}

#[test]
fn oversized_response_reported_before_body_arrives() {
    let big = Frame::Response(Response::ok(-3, 2, Bytes::from(vec![1u8; 1000])));
    let mut wire = BytesMut::new();
    encode_frame(&big, &mut wire);
    encode_frame(&Frame::Request(Request::heartbeat(1)), &mut wire);
    let mut d = Decoder::new(999);
    let mut buf = BytesMut::from(&wire[..16]);
    assert_eq!(
        d.decode(&mut buf).unwrap(),
        Some(Decoded::ResponseTooLarge {
            id: -3,
            serialization: 2,
            event: false,
            len: 1000,
            max: 999
        })
    );
    buf.extend_from_slice(&wire[16..]);
    let got = decode_all(&mut d, &mut buf);
    assert_eq!(got, vec![Decoded::Request(Request::heartbeat(1))]);
}

#[test]
fn payload_limit_disabled_and_exact() {
    let f = Frame::Response(Response::ok(1, 2, Bytes::from(vec![0u8; 64])));
    let mut wire = BytesMut::new();
    encode_frame(&f, &mut wire);
    for limit in [0i64, -1, 64] {
        let got = decode_all(&mut Decoder::new(limit), &mut wire.clone());
        assert_eq!(got, vec![as_decoded(&f)], "limit {limit}");
    }
}

#[test]
fn bad_magic_and_negative_length() {
    let mut buf = BytesMut::from(&b"GET / HTTP/1.1\r\n\r\n"[..]);
    assert_eq!(
        Decoder::new(0).decode(&mut buf),
        Err(DecodeError::BadMagic { found: 0x4745 })
    );
    let mut h = hex("da bb 02 14 00 00 00 00 00 00 00 01 ff ff ff ff");
    let mut buf = BytesMut::from(&h[..]);
    assert_eq!(
        Decoder::new(0).decode(&mut buf),
        Err(DecodeError::NegativeLength { len: -1 })
    );
    h.truncate(15);
    assert_eq!(Header::decode(&h), Ok(None));
}
