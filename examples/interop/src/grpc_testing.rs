//! gRPC's interop test service, `grpc.testing.TestService`
//! (`interop/proto/grpc/testing/test.proto`), over Triple in IDL mode: a provider
//! with the unary behaviour of grpc-go's `interop.NewTestServer`, and the client side
//! of the unary interop cases (grpc's `doc/interop-test-descriptions.md`, as grpc-go's
//! `interop/test_utils.go` asserts them). Streaming rpcs are answered `UNIMPLEMENTED`
//! until Rubbo's streaming issue (#13).

use std::sync::Arc;

use rubbo::{Code, RpcError, Rubbo, Status, Value, context};

/// The code generated from `grpc/testing/*.proto`: messages, `TestService`,
/// `TestServiceClient`, `TestServiceServer`, `UnimplementedServiceClient`, ...
#[allow(missing_docs, clippy::all)]
pub mod proto {
    rubbo::include_proto!("grpc.testing");
}

use proto::{
    EchoStatus, Empty, Payload, PayloadType, SimpleRequest, SimpleResponse, TestService,
    TestServiceClient, TestServiceServer, UnimplementedService as _, UnimplementedServiceClient,
};

/// The request metadata echoed in the response headers (gRPC's initial metadata).
pub const ECHO_INITIAL: &str = "x-grpc-test-echo-initial";
/// The binary request metadata echoed in the trailers: on the wire
/// `x-grpc-test-echo-trailing-bin` (base64), in Rubbo's attachments this key with a
/// [`Value::Binary`].
pub const ECHO_TRAILING: &str = "x-grpc-test-echo-trailing";

/// The unary cases [`run_case`] knows, in the spec's order.
pub const CASES: &[&str] = &[
    "empty_unary",
    "large_unary",
    "status_code_and_message",
    "special_status_message",
    "custom_metadata",
    "unimplemented_method",
    "unimplemented_service",
    "timeout_on_sleeping_server",
];

/// The request payload size of `large_unary` and `custom_metadata`.
pub const LARGE_REQUEST: usize = 271_828;
/// The response payload size they ask for.
pub const LARGE_RESPONSE: i32 = 314_159;
/// The message of `special_status_message`.
pub const SPECIAL_MESSAGE: &str =
    "\t\ntest with whitespace\r\nand Unicode BMP \u{263A} and non-BMP \u{1F608}\t\n";

/// grpc-go's interop server, unary part: `EmptyCall` answers `Empty`; `UnaryCall`
/// (and `CacheableUnaryCall`) echo the metadata of [`ECHO_INITIAL`] in the response
/// headers and of [`ECHO_TRAILING`] in the trailers, fail with `response_status` when
/// its code is not 0, and else answer `response_size` zero bytes; `UnimplementedCall`
/// answers `UNIMPLEMENTED`.
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

fn unary(request: SimpleRequest) -> Result<SimpleResponse, Status> {
    echo_metadata();
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

fn failed(e: Status) -> String {
    format!("call failed: {} {:?}", e.code(), e.message())
}

/// Runs the unary interop case `case` with `rubbo`'s Triple client against the
/// `grpc.testing.TestService` at `127.0.0.1:port`; `Err` says what did not hold.
///
/// `status_code_and_message` and `custom_metadata` run their unary part only.
/// `timeout_on_sleeping_server`, a `FullDuplexCall` in the spec, runs as a
/// `UnaryCall` with a 1 ms deadline whose exchange (a 271828-byte request asking for
/// 2 MiB) cannot finish in that time, and asserts `DEADLINE_EXCEEDED`.
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
            let got = refer(address).await?.unary_call(request).await;
            expect_status(got, Code::Unknown, Some(message))
        }
        "custom_metadata" => {
            let initial = "test_initial_metadata_value";
            let trailing = vec![0xab, 0xab, 0xab];
            let client = refer(address)
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
                Some(Value::Binary(v)) if *v == trailing => Ok(()),
                other => Err(format!(
                    "trailer {ECHO_TRAILING}-bin: {other:?}, want 0xababab (trailers {:?})",
                    md.attachments
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
            let client = refer(format!("{address}?timeout=1")).await?;
            let request = SimpleRequest {
                response_size: 2 * 1024 * 1024,
                ..large_request()
            };
            expect_status(
                client.unary_call(request).await,
                Code::DeadlineExceeded,
                None,
            )
        }
        other => Err(format!(
            "unknown test case {other:?}; known: {}",
            CASES.join(", ")
        )),
    }
}
