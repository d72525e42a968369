//! The `Hello` service of a proto without `package`, over Triple on 127.0.0.1: its
//! wire name is the bare service name, its unary rpc works both ways with statuses,
//! and its streaming rpc (not generated yet) is answered `UNIMPLEMENTED`.
#![allow(clippy::unwrap_used)]

use protobuf_example::hello::{Hello, HelloClient, SayReply, SayRequest};
use rubbo::codegen::{Client, MethodDescriptor, ServiceDescriptor};
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
    let names: Vec<&str> = HelloClient::METHODS.iter().map(|m| m.name).collect();
    assert_eq!(names, ["Say"], "the streaming rpc has no method yet");
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

    // The streaming rpc, called as if it were unary: no handler for it.
    const STREAM: ServiceDescriptor = ServiceDescriptor {
        interface: "Hello",
        version: "",
        group: "",
        methods: &[MethodDescriptor {
            name: "SayMany",
            parameter_types: "",
            rust_name: "say_many",
            parameter_count: 1,
            idl: true,
        }],
    };
    let err = Client::new(&STREAM, invoker)
        .unary::<SayRequest, SayReply>(0, &SayRequest::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented, "{err}");
    assert!(err.message().contains("SayMany"), "{err}");
    c.shutdown().await;
    provider.shutdown().await;
}
