//! gRPC's interop test service, `grpc.testing.TestService`
//! (`interop/proto/grpc/testing/test.proto`), over Triple in IDL mode: a provider
//! with the behaviour of grpc-go's `interop.NewTestServer` (unary and streaming
//! rpcs), and the client side of the interop cases (grpc's
//! `doc/interop-test-descriptions.md`, as grpc-go's `interop/test_utils.go` asserts
//! them).

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use rubbo::stream::{Outbound, Streaming, channel};
use rubbo::{Code, RpcError, Rubbo, Status, Value, context};

/// The code generated from `grpc/testing/*.proto`: messages, `TestService`,
/// `TestServiceClient`, `TestServiceServer`, `UnimplementedServiceClient`, ...
#[allow(missing_docs, clippy::all)]
pub mod proto {
    rubbo::include_proto!("grpc.testing");
}

use proto::{
    BoolValue, EchoStatus, Empty, Payload, PayloadType, ResponseParameters, SimpleRequest,
    SimpleResponse, StreamingInputCallRequest, StreamingInputCallResponse,
    StreamingOutputCallRequest, StreamingOutputCallResponse, TestService, TestServiceClient,
    TestServiceServer, UnimplementedService as _, UnimplementedServiceClient,
};

/// The request metadata echoed in the response headers (gRPC's initial metadata).
pub const ECHO_INITIAL: &str = "x-grpc-test-echo-initial";
/// The binary request metadata echoed in the trailers: on the wire
/// `x-grpc-test-echo-trailing-bin` (base64), in Rubbo's attachments this key with a
/// [`Value::Binary`].
pub const ECHO_TRAILING: &str = "x-grpc-test-echo-trailing";

/// The cases [`run_case`] knows (every case grpc-go runs without TLS or
/// compression, then the four compression cases), in the spec's order.
pub const CASES: &[&str] = &[
    "empty_unary",
    "large_unary",
    "client_streaming",
    "server_streaming",
    "ping_pong",
    "empty_stream",
    "timeout_on_sleeping_server",
    "cancel_after_begin",
    "cancel_after_first_response",
    "status_code_and_message",
    "special_status_message",
    "custom_metadata",
    "unimplemented_method",
    "unimplemented_service",
    "client_compressed_unary",
    "server_compressed_unary",
    "client_compressed_streaming",
    "server_compressed_streaming",
];

/// Triple's compression key: as a reference's URL parameter, what its requests are
/// compressed with; as a response header a service sets, what its replies are
/// compressed with (when the client takes it); as a request attachment the server
/// sets, what the request messages came compressed with.
pub const COMPRESSOR_KEY: &str = "dubbo.rpc.tri.compressor";

/// Whether the current call's request messages came compressed.
fn request_compressed() -> bool {
    context::attachment(COMPRESSOR_KEY).is_some()
}

fn flag(v: Option<&BoolValue>) -> bool {
    v.is_some_and(|b| b.value)
}

/// The status of a request that asked to be compressed and was not.
fn not_compressed() -> Status {
    Status::invalid_argument("expected a compressed request message (expect_compressed)")
}

/// The request payload sizes of `client_streaming` and `ping_pong`.
pub const REQUEST_SIZES: [i32; 4] = [27_182, 8, 1_828, 45_904];
/// The response payload sizes of `server_streaming` and `ping_pong`.
pub const RESPONSE_SIZES: [i32; 4] = [31_415, 9, 2_653, 58_979];
/// How long a case waits for what it expects (streaming calls get this deadline).
const CASE_LIMIT: Duration = Duration::from_secs(20);

/// The request payload size of `large_unary` and `custom_metadata`.
pub const LARGE_REQUEST: usize = 271_828;
/// The response payload size they ask for.
pub const LARGE_RESPONSE: i32 = 314_159;
/// The message of `special_status_message`.
pub const SPECIAL_MESSAGE: &str =
    "\t\ntest with whitespace\r\nand Unicode BMP \u{263A} and non-BMP \u{1F608}\t\n";

/// grpc-go's interop server: `EmptyCall` answers `Empty`; `UnaryCall` (and
/// `CacheableUnaryCall`) echo the metadata of [`ECHO_INITIAL`] in the response
/// headers and of [`ECHO_TRAILING`] in the trailers, fail with `response_status` when
/// its code is not 0, and else answer `response_size` zero bytes; `UnimplementedCall`
/// answers `UNIMPLEMENTED`. `StreamingOutputCall` answers one message per response
/// parameter (after its `interval_us`); `StreamingInputCall` the total payload size;
/// `FullDuplexCall` echoes the metadata as `UnaryCall` does and answers each request
/// at once (or fails with its `response_status`); `HalfDuplexCall` answers every
/// request once the requests ended.
#[derive(Debug, Clone, Copy, Default)]
pub struct TestServiceProvider;

/// Echoes the test metadata of the current call, as grpc-go's server does.
fn echo_metadata() {
    if let Some(v) = context::attachment(ECHO_INITIAL) {
        context::set_response_header(ECHO_INITIAL, v);
    }
    if let Some(v) = context::attachment(ECHO_TRAILING) {
        context::set_response_attachment(ECHO_TRAILING, v);
    }
}

/// A zero-filled payload of `size` bytes of type `kind` (only COMPRESSABLE is
/// served, as grpc-go's `serverNewPayload`).
fn server_payload(kind: i32, size: i32) -> Result<Payload, Status> {
    if kind != PayloadType::Compressable as i32 {
        return Err(Status::invalid_argument(format!(
            "unsupported payload type: {kind}"
        )));
    }
    let size = usize::try_from(size).map_err(|_| {
        Status::invalid_argument(format!("requested a response with invalid length {size}"))
    })?;
    Ok(Payload {
        r#type: kind,
        body: vec![0; size],
    })
}

/// The replies of one streaming request: one per response parameter, each after its
/// interval.
fn replies_for(
    kind: i32,
    parameters: Vec<ResponseParameters>,
) -> impl Stream<Item = Result<StreamingOutputCallResponse, Status>> + Send + 'static {
    futures::stream::iter(parameters).then(move |p| async move {
        if p.interval_us > 0 {
            tokio::time::sleep(Duration::from_micros(p.interval_us as u64)).await;
        }
        Ok(StreamingOutputCallResponse {
            payload: Some(server_payload(kind, p.size)?),
            ..Default::default()
        })
    })
}

/// The status a streaming request asks for, if any.
fn requested_status(request: &StreamingOutputCallRequest) -> Option<Status> {
    request
        .response_status
        .as_ref()
        .filter(|s| s.code != 0)
        .map(|s| Status::new(Code::from_i32(s.code), s.message.clone()))
}

fn unary(request: SimpleRequest) -> Result<SimpleResponse, Status> {
    echo_metadata();
    if flag(request.expect_compressed.as_ref()) && !request_compressed() {
        return Err(not_compressed());
    }
    if flag(request.response_compressed.as_ref()) {
        context::set_response_header(COMPRESSOR_KEY, "gzip");
    }
    if let Some(st) = request.response_status.as_ref().filter(|s| s.code != 0) {
        return Err(Status::new(Code::from_i32(st.code), st.message.clone()));
    }
    if request.response_type != PayloadType::Compressable as i32 {
        return Err(Status::invalid_argument(format!(
            "unsupported payload type: {}",
            request.response_type
        )));
    }
    let size = usize::try_from(request.response_size).map_err(|_| {
        Status::invalid_argument(format!(
            "requested a response with invalid length {}",
            request.response_size
        ))
    })?;
    Ok(SimpleResponse {
        payload: Some(Payload {
            r#type: PayloadType::Compressable as i32,
            body: vec![0; size],
        }),
        ..Default::default()
    })
}

impl TestService for TestServiceProvider {
    async fn empty_call(&self, _: Empty) -> Result<Empty, Status> {
        Ok(Empty {})
    }

    async fn unary_call(&self, request: SimpleRequest) -> Result<SimpleResponse, Status> {
        unary(request)
    }

    async fn cacheable_unary_call(&self, request: SimpleRequest) -> Result<SimpleResponse, Status> {
        unary(request)
    }

    async fn unimplemented_call(&self, _: Empty) -> Result<Empty, Status> {
        Err(Status::unimplemented(
            "grpc.testing.TestService/UnimplementedCall is not implemented, as the spec asks",
        ))
    }

    async fn streaming_output_call(
        &self,
        request: StreamingOutputCallRequest,
    ) -> Result<Outbound<StreamingOutputCallResponse>, Status> {
        if let Some(st) = requested_status(&request) {
            return Err(st);
        }
        // Triple compresses a reply stream as a whole: when any reply asks for it.
        if request
            .response_parameters
            .iter()
            .any(|p| flag(p.compressed.as_ref()))
        {
            context::set_response_header(COMPRESSOR_KEY, "gzip");
        }
        Ok(Outbound::try_from_stream(replies_for(
            request.response_type,
            request.response_parameters,
        )))
    }

    async fn streaming_input_call(
        &self,
        mut requests: Streaming<StreamingInputCallRequest>,
    ) -> Result<StreamingInputCallResponse, Status> {
        let mut sum = 0usize;
        // The call's requests are compressed or not as a whole (its grpc-encoding).
        let compressed = request_compressed();
        while let Some(r) = requests.message().await? {
            if flag(r.expect_compressed.as_ref()) && !compressed {
                return Err(not_compressed());
            }
            sum += r.payload.map_or(0, |p| p.body.len());
        }
        Ok(StreamingInputCallResponse {
            aggregated_payload_size: i32::try_from(sum).unwrap_or(i32::MAX),
        })
    }

    async fn full_duplex_call(
        &self,
        requests: Streaming<StreamingOutputCallRequest>,
    ) -> Result<Outbound<StreamingOutputCallResponse>, Status> {
        echo_metadata();
        let replies = requests.flat_map(|request| match request {
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
            Ok(request) => match requested_status(&request) {
                Some(st) => futures::stream::once(async move { Err(st) }).boxed(),
                None => replies_for(request.response_type, request.response_parameters).boxed(),
            },
        });
        Ok(Outbound::try_from_stream(replies))
    }

    async fn half_duplex_call(
        &self,
        mut requests: Streaming<StreamingOutputCallRequest>,
    ) -> Result<Outbound<StreamingOutputCallResponse>, Status> {
        let mut all = Vec::new();
        while let Some(r) = requests.message().await? {
            all.push(r);
        }
        let replies = futures::stream::iter(all)
            .flat_map(|r| replies_for(r.response_type, r.response_parameters));
        Ok(Outbound::try_from_stream(replies))
    }
}

/// Serves `grpc.testing.TestService` over Triple on `host:port` (0: any free port).
pub async fn serve(host: &str, port: u16) -> Result<(Rubbo, u16), RpcError> {
    let rubbo = Rubbo::builder()
        .application("interop-grpc")
        .host(host)
        .protocol("tri", port)
        .build()?;
    let url = rubbo
        .export(TestServiceServer::new(Arc::new(TestServiceProvider)))
        .await?;
    Ok((rubbo, url.port()))
}

/// A zero-filled payload of `size` bytes.
fn zeros(size: usize) -> Option<Payload> {
    Some(Payload {
        r#type: PayloadType::Compressable as i32,
        body: vec![0; size],
    })
}

/// The `large_unary` request: 271828 bytes asking for 314159.
fn large_request() -> SimpleRequest {
    SimpleRequest {
        response_type: PayloadType::Compressable as i32,
        response_size: LARGE_RESPONSE,
        payload: zeros(LARGE_REQUEST),
        ..Default::default()
    }
}

/// Checks a reply's payload: COMPRESSABLE, `size` bytes, all zero.
fn check_payload(reply: &SimpleResponse, size: i32) -> Result<(), String> {
    let p = reply.payload.as_ref().ok_or("the reply has no payload")?;
    if p.r#type != PayloadType::Compressable as i32 {
        return Err(format!("payload type {}, want COMPRESSABLE", p.r#type));
    }
    if p.body.len() != usize::try_from(size).unwrap_or(usize::MAX) {
        return Err(format!("payload of {} bytes, want {size}", p.body.len()));
    }
    if p.body.iter().any(|&b| b != 0) {
        return Err("the payload is not all zeros".into());
    }
    Ok(())
}

/// Checks that a call failed with `code` and `message`.
fn expect_status<T: std::fmt::Debug>(
    got: Result<T, Status>,
    code: Code,
    message: Option<&str>,
) -> Result<(), String> {
    match got {
        Ok(v) => Err(format!("the call succeeded ({v:?}), want {code}")),
        Err(s) if s.code() != code => Err(format!(
            "status {} {:?}, want {code}",
            s.code(),
            s.message()
        )),
        Err(s) => match message {
            Some(m) if s.message() != m => Err(format!("message {:?}, want {m:?}", s.message())),
            _ => Ok(()),
        },
    }
}

/// A streaming request asking for replies of `sizes`, carrying `payload` bytes.
fn streaming_request(sizes: &[i32], payload: usize) -> StreamingOutputCallRequest {
    StreamingOutputCallRequest {
        response_type: PayloadType::Compressable as i32,
        response_parameters: sizes
            .iter()
            .map(|&size| ResponseParameters {
                size,
                ..Default::default()
            })
            .collect(),
        payload: (payload > 0).then(|| zeros(payload)).flatten(),
        ..Default::default()
    }
}

fn payload_len(r: &StreamingOutputCallResponse) -> usize {
    r.payload.as_ref().map_or(0, |p| p.body.len())
}

/// Checks a streaming reply: there is one, with `size` zero bytes.
fn check_stream_payload(
    reply: Option<StreamingOutputCallResponse>,
    size: i32,
) -> Result<(), String> {
    let reply = reply.ok_or_else(|| format!("the stream ended, want a reply of {size} bytes"))?;
    check_payload(
        &SimpleResponse {
            payload: reply.payload,
            ..Default::default()
        },
        size,
    )
}

/// Waits (bounded) until a cancelled call's request stream is gone, as its sender sees.
async fn cancelled<T>(tx: &rubbo::stream::Sender<T>) -> Result<(), String> {
    tokio::time::timeout(CASE_LIMIT, tx.closed())
        .await
        .map_err(|_| "the cancelled call's request stream is still open".to_owned())
}

fn failed(e: Status) -> String {
    format!("call failed: {} {:?}", e.code(), e.message())
}

/// Runs the interop case `case` (one of [`CASES`]) with `rubbo`'s Triple client
/// against the `grpc.testing.TestService` at `127.0.0.1:port`; `Err` says what did
/// not hold. `timeout_on_sleeping_server` is a `FullDuplexCall` with a 1 ms deadline
/// and asserts `DEADLINE_EXCEEDED`.
pub async fn run_case(rubbo: &Rubbo, port: u16, case: &str) -> Result<(), String> {
    let address = format!("tri://127.0.0.1:{port}");
    let refer = |address: String| async move {
        rubbo
            .refer_url(&TestServiceClient::SERVICE, &address)
            .await
            .map(TestServiceClient::new)
            .map_err(|e| format!("refer {address}: {e}"))
    };
    match case {
        "empty_unary" => {
            let reply = refer(address)
                .await?
                .empty_call(Empty {})
                .await
                .map_err(failed)?;
            if reply != (Empty {}) {
                return Err(format!("reply {reply:?}, want an empty Empty"));
            }
            Ok(())
        }
        "large_unary" => {
            let client = refer(address).await?;
            let reply = client.unary_call(large_request()).await.map_err(failed)?;
            check_payload(&reply, LARGE_RESPONSE)
        }
        "status_code_and_message" | "special_status_message" => {
            let message = if case == "special_status_message" {
                SPECIAL_MESSAGE
            } else {
                "test status message"
            };
            let request = SimpleRequest {
                response_status: Some(EchoStatus {
                    code: 2,
                    message: message.into(),
                }),
                ..Default::default()
            };
            let client = refer(format!("{address}?timeout={}", CASE_LIMIT.as_millis())).await?;
            let got = client.unary_call(request).await;
            expect_status(got, Code::Unknown, Some(message))?;
            if case == "special_status_message" {
                return Ok(());
            }
            // The streaming part: a FullDuplexCall asking for the status.
            let request = StreamingOutputCallRequest {
                response_status: Some(EchoStatus {
                    code: 2,
                    message: message.into(),
                }),
                ..Default::default()
            };
            let (tx, requests) = channel(1);
            let mut replies = client.full_duplex_call(requests).await.map_err(failed)?;
            tx.send(request).await.map_err(failed)?;
            drop(tx);
            expect_status(replies.message().await, Code::Unknown, Some(message))
        }
        "custom_metadata" => {
            let initial = "test_initial_metadata_value";
            let trailing = vec![0xab, 0xab, 0xab];
            let client = refer(address.clone())
                .await?
                .with_attachment(ECHO_INITIAL, initial)
                .with_attachment(ECHO_TRAILING, Value::Binary(trailing.clone()));
            let (reply, md) = context::capture_metadata(client.unary_call(large_request())).await;
            check_payload(&reply.map_err(failed)?, LARGE_RESPONSE)?;
            match md.headers.get(ECHO_INITIAL) {
                Some(Value::String(v)) if v == initial => {}
                other => {
                    return Err(format!(
                        "response header {ECHO_INITIAL}: {other:?}, want {initial:?} (headers {:?})",
                        md.headers
                    ));
                }
            }
            match md.attachments.get(ECHO_TRAILING) {
                Some(Value::Binary(v)) if *v == trailing => {}
                other => {
                    return Err(format!(
                        "trailer {ECHO_TRAILING}-bin: {other:?}, want 0xababab (trailers {:?})",
                        md.attachments
                    ));
                }
            }
            // The streaming part: the same metadata on a FullDuplexCall.
            let client = refer(format!("{address}?timeout={}", CASE_LIMIT.as_millis()))
                .await?
                .with_attachment(ECHO_INITIAL, initial)
                .with_attachment(ECHO_TRAILING, Value::Binary(trailing.clone()));
            let request = streaming_request(&[LARGE_RESPONSE], LARGE_REQUEST);
            let (replies, md) = context::capture_metadata(
                client.full_duplex_call(Outbound::from_messages([request])),
            )
            .await;
            let mut replies = replies.map_err(failed)?;
            let reply = replies.message().await.map_err(failed)?;
            check_stream_payload(reply, LARGE_RESPONSE)?;
            if let Some(extra) = replies.message().await.map_err(failed)? {
                return Err(format!("a second reply {} bytes long", payload_len(&extra)));
            }
            let stream_headers = replies.headers();
            match md
                .headers
                .get(ECHO_INITIAL)
                .or(stream_headers.get(ECHO_INITIAL))
            {
                Some(Value::String(v)) if v == initial => {}
                other => {
                    return Err(format!(
                        "stream response header {ECHO_INITIAL}: {other:?}, want {initial:?}"
                    ));
                }
            }
            match replies.trailers().get(ECHO_TRAILING) {
                Some(Value::Binary(v)) if *v == trailing => Ok(()),
                other => Err(format!(
                    "stream trailer {ECHO_TRAILING}-bin: {other:?}, want 0xababab (trailers {:?})",
                    replies.trailers()
                )),
            }
        }
        "unimplemented_method" => {
            let got = refer(address).await?.unimplemented_call(Empty {}).await;
            expect_status(got, Code::Unimplemented, None)
        }
        "unimplemented_service" => {
            let invoker = rubbo
                .refer_url(&UnimplementedServiceClient::SERVICE, &address)
                .await
                .map_err(|e| format!("refer {address}: {e}"))?;
            let got = UnimplementedServiceClient::new(invoker)
                .unimplemented_call(Empty {})
                .await;
            expect_status(got, Code::Unimplemented, None)
        }
        "timeout_on_sleeping_server" => {
            // A FullDuplexCall with a 1 ms deadline whose request asks for no reply:
            // the call or its first read fails with DEADLINE_EXCEEDED.
            let client = refer(format!("{address}?timeout=1")).await?;
            let (tx, requests) = channel(1);
            let got = match client.full_duplex_call(requests).await {
                Err(e) => Err(e),
                Ok(mut replies) => {
                    let _ = tx.send(streaming_request(&[], 27_182)).await;
                    match tokio::time::timeout(CASE_LIMIT, replies.message()).await {
                        Ok(r) => r,
                        Err(_) => return Err("no reply nor status within the limit".into()),
                    }
                }
            };
            expect_status(got, Code::DeadlineExceeded, None)
        }
        "client_streaming" => {
            let client = refer(format!("{address}?timeout={}", CASE_LIMIT.as_millis())).await?;
            let requests = REQUEST_SIZES.map(|size| StreamingInputCallRequest {
                payload: zeros(size as usize),
                ..Default::default()
            });
            let reply = client
                .streaming_input_call(Outbound::from_messages(requests))
                .await
                .map_err(failed)?;
            let want: i32 = REQUEST_SIZES.iter().sum();
            if reply.aggregated_payload_size != want {
                return Err(format!(
                    "aggregated payload size {}, want {want}",
                    reply.aggregated_payload_size
                ));
            }
            Ok(())
        }
        "server_streaming" => {
            let client = refer(format!("{address}?timeout={}", CASE_LIMIT.as_millis())).await?;
            let request = streaming_request(&RESPONSE_SIZES, 0);
            let mut replies = client
                .streaming_output_call(request)
                .await
                .map_err(failed)?;
            for size in RESPONSE_SIZES {
                let reply = replies.message().await.map_err(failed)?;
                check_stream_payload(reply, size)?;
            }
            match replies.message().await.map_err(failed)? {
                None => Ok(()),
                Some(r) => Err(format!("an extra reply of {} bytes", payload_len(&r))),
            }
        }
        "ping_pong" => {
            let client = refer(format!("{address}?timeout={}", CASE_LIMIT.as_millis())).await?;
            let (tx, requests) = channel(1);
            let mut replies = client.full_duplex_call(requests).await.map_err(failed)?;
            for (req, rep) in REQUEST_SIZES.iter().zip(RESPONSE_SIZES) {
                tx.send(streaming_request(&[rep], *req as usize))
                    .await
                    .map_err(failed)?;
                let reply = replies.message().await.map_err(failed)?;
                check_stream_payload(reply, rep)?;
            }
            drop(tx);
            match replies.message().await.map_err(failed)? {
                None => Ok(()),
                Some(r) => Err(format!("an extra reply of {} bytes", payload_len(&r))),
            }
        }
        "empty_stream" => {
            let client = refer(format!("{address}?timeout={}", CASE_LIMIT.as_millis())).await?;
            let mut replies = client
                .full_duplex_call(Outbound::empty())
                .await
                .map_err(failed)?;
            match replies.message().await.map_err(failed)? {
                None => Ok(()),
                Some(r) => Err(format!("a reply of {} bytes, want none", payload_len(&r))),
            }
        }
        "cancel_after_begin" => {
            // A StreamingInputCall dropped before it sent anything: the request stream
            // is reset, which its sender sees.
            let client = refer(format!("{address}?timeout={}", CASE_LIMIT.as_millis())).await?;
            let (tx, requests) = channel::<StreamingInputCallRequest>(1);
            let call = client.streaming_input_call(requests);
            let early = tokio::time::timeout(Duration::from_millis(200), call).await;
            if let Ok(r) = early {
                return Err(format!("the call ended before it was cancelled: {r:?}"));
            }
            // The timeout dropped the call: its stream is reset (CANCELLED).
            cancelled(&tx).await
        }
        "cancel_after_first_response" => {
            let client = refer(format!("{address}?timeout={}", CASE_LIMIT.as_millis())).await?;
            let (tx, requests) = channel(1);
            let mut replies = client.full_duplex_call(requests).await.map_err(failed)?;
            tx.send(streaming_request(&[31_415], 27_182))
                .await
                .map_err(failed)?;
            check_stream_payload(replies.message().await.map_err(failed)?, 31_415)?;
            drop(replies);
            cancelled(&tx).await
        }
        "client_compressed_unary" => {
            // The probe: the server refuses an uncompressed request that expects to be
            // compressed; then a gzip one, then an uncompressed one.
            let plain = refer(address.clone()).await?;
            let gzip = refer(format!("{address}?{COMPRESSOR_KEY}=gzip")).await?;
            let mut request = large_request();
            request.expect_compressed = Some(BoolValue { value: true });
            let got = plain.unary_call(request.clone()).await;
            expect_status(got, Code::InvalidArgument, None).map_err(|e| format!("probe: {e}"))?;
            let reply = gzip.unary_call(request.clone()).await.map_err(failed)?;
            check_payload(&reply, LARGE_RESPONSE)?;
            request.expect_compressed = Some(BoolValue { value: false });
            let reply = plain.unary_call(request).await.map_err(failed)?;
            check_payload(&reply, LARGE_RESPONSE)
        }
        "server_compressed_unary" => {
            // Triple reads compressed replies as it reads any (the flag is not shown to
            // the caller): both answers are checked whole.
            let client = refer(address).await?;
            for compressed in [true, false] {
                let mut request = large_request();
                request.response_compressed = Some(BoolValue { value: compressed });
                let reply = client.unary_call(request).await.map_err(failed)?;
                check_payload(&reply, LARGE_RESPONSE)
                    .map_err(|e| format!("response_compressed={compressed}: {e}"))?;
            }
            Ok(())
        }
        "client_compressed_streaming" => {
            let limit = format!("timeout={}", CASE_LIMIT.as_millis());
            let plain = refer(format!("{address}?{limit}")).await?;
            let probe = StreamingInputCallRequest {
                expect_compressed: Some(BoolValue { value: true }),
                payload: zeros(27_182),
            };
            let got = plain
                .streaming_input_call(Outbound::from_messages([probe.clone()]))
                .await;
            expect_status(got, Code::InvalidArgument, None).map_err(|e| format!("probe: {e}"))?;
            // Triple compresses a call's requests as a whole: the second message, which
            // the spec sends uncompressed, goes compressed too (it expects nothing).
            let gzip = refer(format!("{address}?{limit}&{COMPRESSOR_KEY}=gzip")).await?;
            let second = StreamingInputCallRequest {
                expect_compressed: Some(BoolValue { value: false }),
                payload: zeros(45_904),
            };
            let reply = gzip
                .streaming_input_call(Outbound::from_messages([probe, second]))
                .await
                .map_err(failed)?;
            if reply.aggregated_payload_size != 73_086 {
                return Err(format!(
                    "aggregated payload size {}, want 73086",
                    reply.aggregated_payload_size
                ));
            }
            Ok(())
        }
        "server_compressed_streaming" => {
            let client = refer(format!("{address}?timeout={}", CASE_LIMIT.as_millis())).await?;
            let sizes = [31_415, 92_653];
            let request = StreamingOutputCallRequest {
                response_type: PayloadType::Compressable as i32,
                response_parameters: sizes
                    .iter()
                    .zip([true, false])
                    .map(|(&size, compressed)| ResponseParameters {
                        size,
                        compressed: Some(BoolValue { value: compressed }),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            let mut replies = client
                .streaming_output_call(request)
                .await
                .map_err(failed)?;
            for size in sizes {
                check_stream_payload(replies.message().await.map_err(failed)?, size)?;
            }
            match replies.message().await.map_err(failed)? {
                None => Ok(()),
                Some(r) => Err(format!("an extra reply of {} bytes", payload_len(&r))),
            }
        }
        other => Err(format!(
            "unknown test case {other:?}; known: {}",
            CASES.join(", ")
        )),
    }
}
