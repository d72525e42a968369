//! The `payload` limit on what a Triple peer sends (issue #13), over real sockets on
//! 127.0.0.1: a message larger than the sender's `payload` is not sent; the call (or
//! the stream, after the messages before it) fails with `RESOURCE_EXHAUSTED`, as gRPC
//! answers, and the text says which size was over which limit.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use rubbo_common::stream::{MessageStream, StreamKind, StreamSlot};
use rubbo_common::{
    Arguments, BoxInvoker, Encoded, Invocation, InvokeFuture, Invoker, Payload, Protocol, RpcError,
    RpcResult, Url,
};
use rubbo_protocol_triple::{Code, TripleProtocol, status};
use rubbo_serialization::PROTOBUF;

const SERVICE: &str = "test.Sizes";
/// The provider's `payload`.
const MAX: usize = 100_000;
/// Bounds every step: a regression fails the test instead of hanging it.
const STEP: Duration = Duration::from_secs(10);

async fn bounded<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(STEP, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {STEP:?}"))
}

/// A request or reply of `len` bytes.
fn sized(len: usize) -> Bytes {
    Bytes::from(vec![b'x'; len])
}

/// The length a request asks for (its first 8 bytes).
fn asked(m: &[u8]) -> usize {
    u64::from_be_bytes(m[..8].try_into().unwrap()) as usize
}

fn ask(len: usize) -> Bytes {
    Bytes::copy_from_slice(&(len as u64).to_be_bytes())
}

fn protobuf(bytes: Bytes) -> Payload {
    Payload::Encoded(Encoded::new(&PROTOBUF, bytes))
}

#[derive(Debug)]
struct Provider {
    url: Url,
    counts: Arc<Counts>,
}

/// What the provider saw.
#[derive(Debug, Default)]
struct Counts {
    /// Calls.
    calls: AtomicUsize,
    /// Reply streams of `Endless` dropped.
    dropped: AtomicUsize,
}

/// Counts its drop.
struct DropCount(Arc<Counts>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

impl Invoker for Provider {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        self.counts.calls.fetch_add(1, Ordering::SeqCst);
        let counts = self.counts.clone();
        Box::pin(async move {
            match inv.method() {
                // Unary: a reply of the size asked for.
                "Reply" => {
                    let Some(Arguments::Encoded { encoded, .. }) = Some(inv.arguments()) else {
                        unreachable!()
                    };
                    Ok(RpcResult::value(protobuf(sized(asked(&encoded.bytes)))))
                }
                // Server streaming: a small reply, one of the size asked for, a small one.
                "Replies" => {
                    let mut s = inv.arguments().as_stream().unwrap().take()?;
                    let len = asked(&s.next().await.unwrap()?);
                    let replies = [sized(10), sized(len), sized(10)];
                    Ok(RpcResult::value(Payload::Stream(StreamSlot::new(
                        StreamKind::Server,
                        MessageStream::new(futures::stream::iter(replies.map(Ok))),
                    ))))
                }
                // Server streaming without end: one reply of the size asked for, then
                // small ones until the stream is dropped (counted in `dropped`).
                "Endless" => {
                    let mut s = inv.arguments().as_stream().unwrap().take()?;
                    let len = asked(&s.next().await.unwrap()?);
                    let guard = DropCount(counts);
                    let replies = futures::stream::iter([Ok(sized(len))]).chain(
                        futures::stream::unfold(guard, |g| async move {
                            tokio::task::yield_now().await;
                            Some((Ok(sized(10)), g))
                        }),
                    );
                    Ok(RpcResult::value(Payload::Stream(StreamSlot::new(
                        StreamKind::Server,
                        MessageStream::new(replies),
                    ))))
                }
                // Client streaming: the number of requests, or the error that ended
                // them (what a handler's `?` on its request stream does).
                "Count" => {
                    let mut s = inv.arguments().as_stream().unwrap().take()?;
                    let mut n = 0u64;
                    while let Some(m) = s.next().await {
                        m?;
                        n += 1;
                    }
                    Ok(RpcResult::value(protobuf(Bytes::copy_from_slice(
                        &n.to_be_bytes(),
                    ))))
                }
                other => Err(RpcError::method_not_found(other.to_owned())),
            }
        })
    }

    fn url(&self) -> &Url {
        &self.url
    }
}

/// A provider with `payload` = [`MAX`] and a consumer of it with `consumer_params`.
async fn setup(consumer_params: &str) -> (TripleProtocol, BoxInvoker, Arc<Counts>) {
    setup_with("", consumer_params).await
}

/// [`setup`], with `provider_params` (`&key=value...`) added to the provider's URL.
async fn setup_with(
    provider_params: &str,
    consumer_params: &str,
) -> (TripleProtocol, BoxInvoker, Arc<Counts>) {
    let url = Url::parse(&format!(
        "tri://127.0.0.1:0/{SERVICE}?interface={SERVICE}&methods=Reply,Replies,Endless,Count\
         &idl-methods=Reply,Replies,Endless,Count\
         &stream-methods=Replies:server,Endless:server,Count:client\
         &payload={MAX}{provider_params}"
    ))
    .unwrap();
    let protocol = TripleProtocol::new();
    let counts = Arc::new(Counts::default());
    let exporter = protocol
        .export(Arc::new(Provider {
            url,
            counts: counts.clone(),
        }))
        .await
        .unwrap();
    std::mem::forget(exporter);
    let port = protocol.server_addrs()[0].port();
    let consumer = protocol
        .refer(
            Url::parse(&format!(
                "tri://127.0.0.1:{port}/{SERVICE}?interface={SERVICE}&timeout=10000&{consumer_params}"
            ))
            .unwrap(),
        )
        .await
        .unwrap();
    (protocol, consumer, counts)
}

fn unary(message: Bytes) -> Invocation {
    Invocation::new(SERVICE, "Reply").with_arguments(Arguments::Encoded {
        count: 1,
        encoded: Encoded::new(&PROTOBUF, message),
    })
}

#[tokio::test]
async fn a_unary_reply_over_the_providers_payload_is_resource_exhausted() {
    let (_p, consumer, _) = setup("payload=100000000").await;
    let e = bounded("the call", consumer.invoke(unary(ask(MAX + 1))))
        .await
        .unwrap_err();
    assert_eq!(status::code_for_error(&e), Code::ResourceExhausted, "{e}");
    let text = status::message_for_error(&e);
    assert!(
        text.contains(&format!(
            "Data length too large: {}, max payload: {MAX}",
            MAX + 1
        )),
        "{text}"
    );
    // At the limit it is sent, and the provider still serves.
    let r = bounded("the call", consumer.invoke(unary(ask(MAX))))
        .await
        .unwrap();
    match r.into_payload().unwrap() {
        Payload::Encoded(e) => assert_eq!(e.bytes.len(), MAX),
        other => panic!("not a message: {other:?}"),
    }
}

#[tokio::test]
async fn a_stream_reply_over_the_providers_payload_ends_the_stream_resource_exhausted() {
    let (_p, consumer, _) = setup("payload=100000000").await;
    let call = Invocation::new(SERVICE, "Replies").with_arguments(Arguments::Stream(
        StreamSlot::new(StreamKind::Server, MessageStream::once(ask(MAX + 1))),
    ));
    let result = bounded("the call", consumer.invoke(call)).await.unwrap();
    let Payload::Stream(slot) = result.into_payload().unwrap() else {
        panic!("not a stream")
    };
    let got: Vec<_> = bounded("the replies", slot.take().unwrap().collect()).await;
    assert_eq!(
        got.len(),
        2,
        "the reply before it, then the status: {got:?}"
    );
    assert_eq!(got[0].as_ref().unwrap().len(), 10);
    let e = got[1].as_ref().unwrap_err();
    assert_eq!(status::code_for_error(e), Code::ResourceExhausted, "{e}");
    assert!(
        status::message_for_error(e).contains(&format!("max payload: {MAX}")),
        "{e}"
    );
}

#[tokio::test]
async fn a_request_over_the_consumers_payload_is_not_sent() {
    let (_p, consumer, counts) = setup("payload=1000").await;
    let e = bounded("the call", consumer.invoke(unary(sized(1001))))
        .await
        .unwrap_err();
    assert_eq!(status::code_for_error(&e), Code::ResourceExhausted, "{e}");
    assert!(!e.is_retryable(), "a retry sends the same message");
    assert!(e.message().contains("Data length too large: 1001"), "{e}");
    assert_eq!(
        counts.calls.load(Ordering::SeqCst),
        0,
        "nothing reached the provider"
    );
}

/// A client stream's message over the provider's `payload` is answered as gRPC
/// servers answer it (grpc-go, grpc-java: `RESOURCE_EXHAUSTED` with the sizes, in the
/// response's trailers), not with a reset, on both HTTP/2 transports; the request
/// stream is still open when the answer comes.
async fn request_stream_over_the_providers_payload(transport: &str) {
    // The consumer's own limit is higher: the message is sent, the provider refuses it.
    let (_p, consumer, _) = setup_with(
        &format!("&triple.transport={transport}"),
        "payload=100000000",
    )
    .await;
    let (tx, requests) = rubbo_common::stream::channel(1);
    let call = Invocation::new(SERVICE, "Count").with_arguments(Arguments::Stream(
        StreamSlot::new(StreamKind::Client, requests),
    ));
    let result = tokio::spawn(consumer.invoke(call));
    bounded("a small request", tx.send(sized(10)))
        .await
        .unwrap();
    bounded("the large request", tx.send(sized(MAX + 1)))
        .await
        .unwrap();
    // The request stream stays open: the answer must not wait for its end.
    let e = bounded("the answer", result)
        .await
        .unwrap()
        .expect_err("the provider refused the message");
    assert_eq!(status::code_for_error(&e), Code::ResourceExhausted, "{e}");
    let message = status::message_for_error(&e);
    assert!(
        message.contains(&format!("{} bytes exceeds the limit of {MAX}", MAX + 1)),
        "{e}"
    );
    drop(tx);
    // The provider still serves.
    let r = bounded("the next call", consumer.invoke(unary(ask(10))))
        .await
        .unwrap();
    match r.into_payload().unwrap() {
        Payload::Encoded(e) => assert_eq!(e.bytes.len(), 10),
        other => panic!("not a message: {other:?}"),
    }
}

#[tokio::test]
async fn a_request_stream_message_over_the_providers_payload_is_resource_exhausted_native() {
    request_stream_over_the_providers_payload("native").await;
}

#[tokio::test]
async fn a_request_stream_message_over_the_providers_payload_is_resource_exhausted_hyper() {
    request_stream_over_the_providers_payload("hyper").await;
}

/// A reply over the consumer's own `payload` is refused by the consumer as gRPC
/// clients refuse it (`RESOURCE_EXHAUSTED`, with the sizes), without reading it whole
/// into memory; the connection stays usable for the next call.
#[tokio::test]
async fn a_unary_reply_over_the_consumers_payload_is_resource_exhausted() {
    let (_p, consumer, counts) = setup("payload=1000").await;
    let e = bounded("the call", consumer.invoke(unary(ask(5_000))))
        .await
        .unwrap_err();
    assert_eq!(
        counts.calls.load(Ordering::SeqCst),
        1,
        "the provider answered"
    );
    assert_eq!(status::code_for_error(&e), Code::ResourceExhausted, "{e}");
    let text = status::message_for_error(&e);
    assert!(text.contains("1000"), "names the limit: {text}");
    let r = bounded("the next call", consumer.invoke(unary(ask(1000))))
        .await
        .unwrap();
    match r.into_payload().unwrap() {
        Payload::Encoded(e) => assert_eq!(e.bytes.len(), 1000),
        other => panic!("not a message: {other:?}"),
    }
}

/// A server stream's message over the consumer's `payload`: the messages before it
/// arrive, then the stream ends with `RESOURCE_EXHAUSTED`; the consumer can call again.
#[tokio::test]
async fn a_stream_reply_over_the_consumers_payload_ends_the_stream_resource_exhausted() {
    let (_p, consumer, _) = setup("payload=1000").await;
    let call = Invocation::new(SERVICE, "Replies").with_arguments(Arguments::Stream(
        StreamSlot::new(StreamKind::Server, MessageStream::once(ask(5_000))),
    ));
    let result = bounded("the call", consumer.invoke(call)).await.unwrap();
    let Payload::Stream(slot) = result.into_payload().unwrap() else {
        panic!("not a stream")
    };
    let got: Vec<_> = bounded("the replies", slot.take().unwrap().collect()).await;
    assert_eq!(got.len(), 2, "the reply before it, then the error: {got:?}");
    assert_eq!(got[0].as_ref().unwrap().len(), 10);
    let e = got[1].as_ref().unwrap_err();
    assert_eq!(status::code_for_error(e), Code::ResourceExhausted, "{e}");
    assert!(status::message_for_error(e).contains("1000"), "{e}");
    let r = bounded("the next call", consumer.invoke(unary(ask(10))))
        .await
        .unwrap();
    match r.into_payload().unwrap() {
        Payload::Encoded(e) => assert_eq!(e.bytes.len(), 10),
        other => panic!("not a message: {other:?}"),
    }
}

/// A server stream whose message is over the consumer's `payload` is reset by the
/// consumer: the provider's reply stream is dropped (it stops producing), not left
/// writing into a stream nobody reads.
#[tokio::test]
async fn a_stream_reply_over_the_consumers_payload_stops_the_provider() {
    let (_p, consumer, counts) = setup("payload=1000").await;
    let call = Invocation::new(SERVICE, "Endless").with_arguments(Arguments::Stream(
        StreamSlot::new(StreamKind::Server, MessageStream::once(ask(5_000))),
    ));
    let result = bounded("the call", consumer.invoke(call)).await.unwrap();
    let Payload::Stream(slot) = result.into_payload().unwrap() else {
        panic!("not a stream")
    };
    let mut replies = slot.take().unwrap();
    let e = bounded("the first reply", replies.next())
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(status::code_for_error(&e), Code::ResourceExhausted, "{e}");
    assert!(bounded("the end", replies.next()).await.is_none());
    bounded("the provider's stream dropped", async {
        while counts.dropped.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}
