//! The serialization is chosen by name at refer time and named by every encoded value;
//! the body codec carries only Hessian 2 and says so.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use rubbo_common::serialization::{DeserializeFn, SerializationError};
use rubbo_common::{
    Arguments, Encoded, ErrorKind, Exporter, Invocation, InvokeFuture, Invoker, Payload, Protocol,
    RpcResult, Serialization, Url, Value,
};
use rubbo_protocol_dubbo::DubboProtocol;
use rubbo_protocol_dubbo::codec::{self, CodecError};
use rubbo_serialization::{HESSIAN2, Serializations};

const IFACE: &str = "org.rubbo.bench.EchoService";

/// A user's serialization that is not Hessian 2 by name (its bytes happen to be).
struct Relay;

static RELAY: Relay = Relay;

impl Serialization for Relay {
    fn name(&self) -> &'static str {
        "relay"
    }
    fn id(&self) -> u8 {
        30
    }
    fn content_type(&self) -> &'static str {
        "application/x-relay"
    }
    fn read_values(&self, bytes: &[u8], count: usize) -> Result<Vec<Value>, SerializationError> {
        HESSIAN2.read_values(bytes, count)
    }
    fn deserialize<'de>(
        &self,
        bytes: &'de [u8],
        visit: &mut DeserializeFn<'_, 'de>,
    ) -> Result<(), SerializationError> {
        HESSIAN2.deserialize(bytes, visit)
    }
    fn deserialize_values<'de>(
        &self,
        bytes: &'de [u8],
        count: usize,
        visit: &mut DeserializeFn<'_, 'de>,
    ) -> Result<(), SerializationError> {
        HESSIAN2.deserialize_values(bytes, count, visit)
    }
    fn write_value(&self, value: &Value, out: &mut BytesMut) -> Result<(), SerializationError> {
        HESSIAN2.write_value(value, out)
    }
    fn write(
        &self,
        value: &dyn erased_serde::Serialize,
        out: &mut BytesMut,
    ) -> Result<(), SerializationError> {
        HESSIAN2.write(value, out)
    }
    fn write_values(
        &self,
        values: &dyn erased_serde::Serialize,
        out: &mut BytesMut,
    ) -> Result<(), SerializationError> {
        HESSIAN2.write_values(values, out)
    }
}

/// Echoes its string argument back still encoded, and reports which serialization
/// the arguments arrived in as an attachment.
#[derive(Debug)]
struct Echo {
    url: Url,
}

impl Invoker for Echo {
    fn invoke(&self, inv: Invocation) -> InvokeFuture {
        Box::pin(async move {
            let Arguments::Encoded { encoded, .. } = inv.arguments() else {
                panic!("the provider hands arguments on encoded");
            };
            let name = encoded.serialization.name();
            let (s,): (String,) = inv.arguments().decode()?;
            Ok(RpcResult::value(Payload::typed(s)).with_attachment("args-in", name))
        })
    }
    fn url(&self) -> &Url {
        &self.url
    }
}

#[tokio::test]
async fn the_url_names_the_serialization_and_values_carry_it_both_ways() {
    let server = DubboProtocol::new();
    let url = Url::parse(&format!("dubbo://127.0.0.1:0/{IFACE}?side=provider")).unwrap();
    let _exporter: Box<dyn Exporter> = server.export(Arc::new(Echo { url })).await.unwrap();
    let port = server.server_addr("127.0.0.1:0").unwrap().port();
    let client = DubboProtocol::new();
    for query in ["", "?serialization=hessian2", "?serialization="] {
        let invoker = client
            .refer(Url::parse(&format!("dubbo://127.0.0.1:{port}/{IFACE}{query}")).unwrap())
            .await
            .unwrap();
        let inv = Invocation::new(IFACE, "echo")
            .with_parameter_types("Ljava/lang/String;")
            .with_arguments(Arguments::typed(1, ("hi",)));
        let r = invoker.invoke(inv).await.unwrap();
        assert_eq!(
            r.attachments().get("args-in"),
            Some(&Value::from("hessian2")),
            "{query}"
        );
        let Some(Payload::Encoded(e)) = r.payload() else {
            panic!("the response value stays encoded");
        };
        assert_eq!(
            (e.serialization.name(), e.serialization.id()),
            ("hessian2", 2)
        );
        assert_eq!(r.payload().unwrap().decode::<String>().unwrap(), "hi");
    }
    client.destroy().await;
    server.destroy().await;
}

#[tokio::test]
async fn an_unknown_or_unusable_serialization_fails_at_refer_time() {
    // No server is needed: the name is checked before connecting.
    let url = |q: &str| Url::parse(&format!("dubbo://127.0.0.1:1/{IFACE}?{q}")).unwrap();
    let err = DubboProtocol::new()
        .refer(url("serialization=kryo"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Serialization);
    assert!(
        err.message()
            .contains("no serialization extension named \"kryo\" (known: hessian2)"),
        "{err}"
    );
    let custom = DubboProtocol::with_serializations(Serializations::default().with(&RELAY));
    let err = custom.refer(url("serialization=relay")).await.unwrap_err();
    assert!(
        err.message()
            .contains("the dubbo protocol cannot send serialization \"relay\" (usable: hessian2)"),
        "{err}"
    );
    let err = custom.refer(url("serialization=fst")).await.unwrap_err();
    assert!(err.message().contains("(known: hessian2, relay)"), "{err}");
}

#[test]
fn frames_in_another_serialization_id_are_rejected_by_the_body_codec() {
    assert_eq!(codec::body_serialization(2).unwrap().name(), "hessian2");
    for id in [0, 23, 30, 31] {
        assert!(matches!(
            codec::body_serialization(id),
            Err(CodecError::Serialization(i)) if i == id
        ));
    }
    assert!(matches!(
        codec::decode_response(30, &Bytes::from_static(b"\x91")),
        Err(CodecError::Serialization(30))
    ));
}

#[test]
fn a_value_encoded_in_another_serialization_is_written_in_hessian() {
    let mut bytes = BytesMut::new();
    RELAY.write(&"relayed", &mut bytes).unwrap();
    let result = RpcResult::value(Payload::Encoded(Encoded::new(&RELAY, bytes.freeze())));
    let mut body = BytesMut::new();
    codec::encode_response(&result, false, &mut body).unwrap();
    let back = codec::decode_response(2, &body.freeze()).unwrap();
    let Some(Payload::Encoded(e)) = back.payload() else {
        panic!("not encoded");
    };
    assert_eq!(e.serialization.name(), "hessian2");
    assert_eq!(e.decode::<String>().unwrap(), "relayed");
}
