//! gRPC's interop `grpc.testing.TestService` over Triple on 127.0.0.1, no Go needed:
//! every unary case of Rubbo's interop client against Rubbo's server, and a tonic
//! client against Rubbo's server (what grpc-go's client checks: sizes, status code
//! and message, the echoed metadata, `UNIMPLEMENTED`).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use interop::grpc_testing::{self, CASES, ECHO_INITIAL, LARGE_REQUEST, LARGE_RESPONSE};
use rubbo::Rubbo;

/// tonic's client of the same protos.
#[allow(missing_docs, dead_code, clippy::all)]
mod tonic_testing {
    include!(concat!(env!("OUT_DIR"), "/tonic/grpc.testing.rs"));
}

/// Every case of these tests ends well within this.
const BOUND: Duration = Duration::from_secs(30);

#[tokio::test]
async fn every_case_of_the_rust_client_passes_against_the_rust_server() {
    let (server, port) = grpc_testing::serve("127.0.0.1", 0).await.unwrap();
    let client = Rubbo::builder().application("grpc-test").build().unwrap();
    for case in CASES {
        let got = tokio::time::timeout(BOUND, grpc_testing::run_case(&client, port, case))
            .await
            .unwrap();
        assert_eq!(got, Ok(()), "{case}");
    }
    // A case it does not know is a failure that names the known ones.
    let err = grpc_testing::run_case(&client, port, "no_such_case")
        .await
        .unwrap_err();
    assert!(err.contains("empty_unary"), "{err}");
    client.shutdown().await;
    server.shutdown().await;
}

#[tokio::test]
async fn a_tonic_client_sees_the_test_service_behave_as_grpc_go_s() {
    use tonic_testing::test_service_client::TestServiceClient;
    use tonic_testing::unimplemented_service_client::UnimplementedServiceClient;
    use tonic_testing::{EchoStatus, Empty, Payload, SimpleRequest};

    let (server, port) = grpc_testing::serve("127.0.0.1", 0).await.unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let mut client = tokio::time::timeout(BOUND, TestServiceClient::connect(url.clone()))
        .await
        .unwrap()
        .unwrap()
        .max_decoding_message_size(8 << 20);

    client.empty_call(Empty {}).await.unwrap();

    let large = SimpleRequest {
        response_size: LARGE_RESPONSE,
        payload: Some(Payload {
            r#type: 0,
            body: vec![0; LARGE_REQUEST],
        }),
        ..Default::default()
    };
    let mut request = tonic::Request::new(large.clone());
    request
        .metadata_mut()
        .insert(ECHO_INITIAL, "test_initial_metadata_value".parse().unwrap());
    request.metadata_mut().insert_bin(
        "x-grpc-test-echo-trailing-bin",
        tonic::metadata::MetadataValue::from_bytes(&[0xab, 0xab, 0xab]),
    );
    let reply = client.unary_call(request).await.unwrap();
    // tonic merges the trailers into the metadata; Rubbo's client case tells them apart.
    assert_eq!(
        reply.metadata().get(ECHO_INITIAL).unwrap(),
        "test_initial_metadata_value"
    );
    assert_eq!(
        reply
            .metadata()
            .get_bin("x-grpc-test-echo-trailing-bin")
            .unwrap()
            .to_bytes()
            .unwrap()
            .as_ref(),
        &[0xab, 0xab, 0xab]
    );
    let body = reply.into_inner().payload.unwrap().body;
    assert_eq!(body.len(), LARGE_RESPONSE as usize);
    assert!(body.iter().all(|&b| b == 0));

    for message in ["test status message", grpc_testing::SPECIAL_MESSAGE] {
        let status = client
            .unary_call(SimpleRequest {
                response_status: Some(EchoStatus {
                    code: 2,
                    message: message.into(),
                }),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unknown);
        assert_eq!(status.message(), message);
    }

    let status = client.unimplemented_call(Empty {}).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unimplemented);
    let mut other = UnimplementedServiceClient::connect(url).await.unwrap();
    let status = other.unimplemented_call(Empty {}).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unimplemented);
    // Streaming, as tonic sees it: a server stream, a client stream, a full duplex
    // ping-pong, a status mid-stream.
    use tonic_testing::{
        Payload as TPayload, ResponseParameters, StreamingInputCallRequest,
        StreamingOutputCallRequest,
    };
    let ask = |sizes: &[i32]| StreamingOutputCallRequest {
        response_parameters: sizes
            .iter()
            .map(|&size| ResponseParameters {
                size,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let mut replies = client
        .streaming_output_call(ask(&[3, 0, 70_000]))
        .await
        .unwrap()
        .into_inner();
    let mut sizes = Vec::new();
    while let Some(r) = replies.message().await.unwrap() {
        sizes.push(r.payload.map_or(0, |p| p.body.len()));
    }
    assert_eq!(sizes, [3, 0, 70_000]);
    let uploads = futures::stream::iter([5usize, 0, 100_000].map(|n| StreamingInputCallRequest {
        payload: Some(TPayload {
            r#type: 0,
            body: vec![0; n],
        }),
        ..Default::default()
    }));
    let total = client.streaming_input_call(uploads).await.unwrap();
    assert_eq!(total.into_inner().aggregated_payload_size, 100_005);
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let mut replies = client
        .full_duplex_call(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|m| (m, rx))
        }))
        .await
        .unwrap()
        .into_inner();
    for size in [1, 2, 3] {
        tx.send(ask(&[size])).await.unwrap();
        let r = replies.message().await.unwrap().unwrap();
        assert_eq!(r.payload.map_or(0, |p| p.body.len()), size as usize);
    }
    tx.send(StreamingOutputCallRequest {
        response_status: Some(tonic_testing::EchoStatus {
            code: 9,
            message: "mid-stream".into(),
        }),
        ..Default::default()
    })
    .await
    .unwrap();
    let status = replies.message().await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::FailedPrecondition);
    assert_eq!(status.message(), "mid-stream");
    server.shutdown().await;
}
