//! Round trips through a real client and server on 127.0.0.1, and raw decode speed.
//!
//! Run with `cargo bench -p rubbo-remoting --bench echo`.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::future::join_all;
use rubbo_remoting::{
    ClientConfig, ConnectionInfo, Decoder, ExchangeClient, Frame, HESSIAN2, Request, Response,
    Server, ServerConfig, encode_frame, handler_fn,
};

fn echo_server(rt: &tokio::runtime::Runtime) -> (Server, ExchangeClient) {
    rt.block_on(async {
        let echo = handler_fn(|req: Request, _c: ConnectionInfo| async move {
            req.two_way
                .then(|| Response::ok(req.id, req.serialization, req.body))
        });
        let server = Server::bind("127.0.0.1:0", ServerConfig::default(), echo)
            .await
            .expect("bind");
        let client =
            ExchangeClient::connect(&server.local_addr().to_string(), ClientConfig::default())
                .await
                .expect("connect");
        (server, client)
    })
}

fn round_trips(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (_server, client) = echo_server(&rt);
    let timeout = Duration::from_secs(10);
    let mut g = c.benchmark_group("echo");
    g.measurement_time(Duration::from_secs(5));

    let small = Bytes::from(vec![b'x'; 64]);
    g.throughput(Throughput::Elements(1));
    g.bench_function("sequential_64B", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let r = client.request(small.clone(), HESSIAN2, timeout).await;
                    black_box(r.expect("call"));
                }
                start.elapsed()
            })
        })
    });

    for (name, size, in_flight) in [
        ("concurrent_1000x64B", 64, 1000u64),
        ("concurrent_100x16KiB", 16 * 1024, 100),
    ] {
        let body = Bytes::from(vec![b'x'; size]);
        g.throughput(Throughput::Elements(in_flight));
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let calls =
                            (0..in_flight).map(|_| client.request(body.clone(), HESSIAN2, timeout));
                        for r in join_all(calls).await {
                            black_box(r.expect("call"));
                        }
                    }
                    start.elapsed()
                })
            })
        });
    }
    g.finish();
}

fn decode(c: &mut Criterion) {
    let mut wire = BytesMut::new();
    for i in 0..1000 {
        let req = Request::new(i, HESSIAN2, Bytes::from(vec![b'x'; 200]));
        encode_frame(&Frame::Request(req), &mut wire);
    }
    let wire = wire.freeze();
    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Bytes(wire.len() as u64));
    g.bench_function("decode_1000x200B", |b| {
        b.iter(|| {
            let mut buf = BytesMut::from(&wire[..]);
            let mut d = Decoder::new(8 << 20);
            let mut n = 0;
            while let Some(f) = d.decode(&mut buf).expect("decode") {
                black_box(f);
                n += 1;
            }
            assert_eq!(n, 1000);
        })
    });
    g.finish();
}

criterion_group!(benches, round_trips, decode);
criterion_main!(benches);
