//! The `Hello` service of a proto without `package`, over Triple on 127.0.0.1: its
//! wire name is the bare service name, its unary rpc works both ways with statuses,
//! and so does its server-streaming rpc.
#![allow(clippy::unwrap_used)]

use futures::StreamExt;
use protobuf_example::hello::{Hello, HelloClient, SayRequest};
use rubbo::codegen::StreamKind;
use rubbo::{Code, Rubbo};

async fn consumer(port: u16) -> (Rubbo, rubbo::BoxInvoker) {
    let c = Rubbo::builder().application("hello-test").build().unwrap();
    let invoker = c
        .refer_url(&HelloClient::SERVICE, &format!("tri://127.0.0.1:{port}"))
        .await
        .unwrap();
    (c, invoker)
}

#[tokio::test]
async fn a_proto_without_package_is_served_under_its_bare_service_name() {
    assert_eq!(HelloClient::INTERFACE, "Hello");
    let names: Vec<(&str, Option<StreamKind>)> = HelloClient::METHODS
        .iter()
        .map(|m| (m.name, m.stream))
        .collect();
    assert_eq!(
        names,
        [("Say", None), ("SayMany", Some(StreamKind::Server))]
    );
    let (provider, port) = protobuf_example::app(0).await.unwrap();
    let (c, invoker) = consumer(port).await;
    let client = HelloClient::new(invoker.clone());
    let reply = client
        .say(SayRequest {
            name: "world".into(),
        })
        .await
        .unwrap();
    assert_eq!(reply.message, "Hello, world!");
    let err = client.say(SayRequest::default()).await.unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (Code::InvalidArgument, "name is empty")
    );

    // The server-streaming rpc: every reply, in order, then the end.
    let replies: Vec<String> = client
        .say_many(SayRequest {
            name: "world".into(),
        })
        .await
        .unwrap()
        .map(|r| r.unwrap().message)
        .collect()
        .await;
    assert_eq!(
        replies,
        [
            "Hello, world! (1/3)",
            "Hello, world! (2/3)",
            "Hello, world! (3/3)"
        ]
    );
    let err = client.say_many(SayRequest::default()).await.unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (Code::InvalidArgument, "name is empty")
    );
    c.shutdown().await;
    provider.shutdown().await;
}
