//! Streaming `#[rubbo::service]` methods in Triple's wrapper mode: what Java Dubbo
//! 3.3 sends for a plain interface method with a `StreamObserver<T>`
//! (`ReflectionPackableMethod`), one hessian2 value per stream message.
//!
//! | Rust trait method | Java method | `stream-methods` |
//! |---|---|---|
//! | `async fn m(&self, req: A) -> Result<Outbound<R>, RpcError>` | `void m(A, StreamObserver<R>)` | `server` |
//! | `async fn m(&self, reqs: Streaming<A>) -> Result<R, RpcError>` | `StreamObserver<A> m(StreamObserver<R>)` | `client` |
//! | `async fn m(&self, reqs: Streaming<A>) -> Result<Outbound<R>, RpcError>` | `StreamObserver<A> m(StreamObserver<R>)` | `bidi` |
//!
//! Java has no client-streaming shape outside IDL stubs (reflection makes it
//! bidirectional); on the wire both are one HTTP/2 stream each way, so a Java
//! consumer calls a Rust client-streaming method as a bidirectional one that answers
//! once, and a Rust consumer calls a Java bidirectional method as client-streaming
//! when it answers once.
//!
//! Each request message is a `TripleRequestWrapper` with one `args` entry; its
//! `argTypes` are what Java writes: the boxed element class for a client or
//! bidirectional stream (`[A]`), the method's two parameter types for the one request
//! of a server stream (`[A, org.apache.dubbo.common.stream.StreamObserver]`). Each
//! reply is a `TripleResponseWrapper` (`serializeType` `hessian4`, `type` the element
//! class). An error ends the stream with a gRPC status in the trailers (Java's
//! `onError`), never a wrapped exception.

use std::future::Future;

use bytes::Bytes;
use prost::Message;
use rubbo_common::stream::{MessageStream, StreamKind, StreamSlot};
use rubbo_common::{Arguments, Encoded, Invocation, InvokeFuture, Payload, RpcError, RpcResult};
use rubbo_protocol_triple::Status;
use rubbo_protocol_triple::wrapper::{HESSIAN4, TripleRequestWrapper, TripleResponseWrapper};
use rubbo_serialization::PROTOBUF;
use serde::de::DeserializeOwned;

use crate::codegen::{Client, fail, serve_handler};
use crate::java_type::{Java, JavaType};
use crate::stream::{Outbound, Streaming};

/// Java's stream parameter class, as `argTypes` name it.
pub const STREAM_OBSERVER: &str = "org.apache.dubbo.common.stream.StreamObserver";
/// Its JVM descriptor, as a streaming method's parameter descriptors name it.
pub const STREAM_OBSERVER_DESCRIPTOR: &str = "Lorg/apache/dubbo/common/stream/StreamObserver;";

/// The Java class a stream element of type `T` is declared as (`StreamObserver<T>`
/// takes a class: `int` is `java.lang.Integer`).
fn element_class<T: JavaType>() -> String {
    rubbo_common::descriptor::split_names(T::BOXED_DESCRIPTOR)
        .and_then(|mut v| (v.len() == 1).then(|| v.remove(0)))
        .unwrap_or_else(|| "java.lang.Object".to_owned())
}

fn hessian<T: JavaType>(value: T) -> Result<Bytes, Status> {
    rubbo_hessian2::to_vec(&Java(value))
        .map(Bytes::from)
        .map_err(|e| Status::internal(format!("cannot encode a stream message: {e}")))
}

fn request_message<T: JavaType>(value: T, arg_types: Vec<String>) -> Result<Bytes, Status> {
    let w = TripleRequestWrapper {
        serialize_type: HESSIAN4.to_owned(),
        args: vec![hessian(value)?],
        arg_types,
    };
    Ok(w.encode_to_vec().into())
}

/// One request message of a client or bidirectional stream.
fn encode_request<T: JavaType>(value: T) -> Result<Bytes, Status> {
    request_message(value, vec![element_class::<T>()])
}

/// One reply message.
fn encode_reply<T: JavaType>(value: T) -> Result<Bytes, Status> {
    let w = TripleResponseWrapper {
        serialize_type: HESSIAN4.to_owned(),
        data: hessian(value)?,
        r#type: element_class::<T>(),
    };
    Ok(w.encode_to_vec().into())
}

fn decode_request<T: DeserializeOwned>(bytes: Bytes) -> Result<T, Status> {
    let w = TripleRequestWrapper::decode_stream_message(bytes)
        .map_err(|e| Status::internal(format!("bad stream message: {e}")))?;
    rubbo_hessian2::from_slice(&w.args[0])
        .map_err(|e| Status::internal(format!("cannot decode a stream message: {e}")))
}

fn decode_reply<T: DeserializeOwned>(bytes: Bytes) -> Result<T, Status> {
    let w = TripleResponseWrapper::decode_strict(bytes)
        .map_err(|e| Status::internal(format!("bad stream reply: {e}")))?;
    rubbo_hessian2::from_slice(&w.data)
        .map_err(|e| Status::internal(format!("cannot decode a stream reply: {e}")))
}

/// The replies of a streaming call, wrapper-decoded.
fn replies<Rep: DeserializeOwned>(result: RpcResult) -> Result<Streaming<Rep>, RpcError> {
    crate::context::record_response(&result);
    let messages = match result.into_payload()? {
        Payload::Stream(slot) => slot.take()?,
        Payload::Encoded(e) if rubbo_serialization::is_protobuf(e.serialization) => {
            MessageStream::once(e.bytes)
        }
        Payload::Null => MessageStream::empty(),
        other => {
            return Err(RpcError::serialization(format!(
                "the reply is not a message stream: {other:?}"
            )));
        }
    };
    Ok(Streaming::with_decoder(messages, decode_reply::<Rep>))
}

impl Client {
    fn wrapper_call(
        &self,
        method: usize,
        kind: StreamKind,
        messages: MessageStream,
    ) -> InvokeFuture {
        let slot = StreamSlot::new(kind, messages);
        self.invoker()
            .invoke(self.invocation(method, Arguments::Stream(slot)))
    }

    /// Calls server-streaming wrapper-mode method number `method` with `request`: the
    /// replies as they come.
    pub fn wrapper_server_streaming<Req: JavaType, Rep: DeserializeOwned + Send + 'static>(
        &self,
        method: usize,
        request: Req,
    ) -> impl Future<Output = Result<Outbound<Rep>, RpcError>> + Send + 'static + use<Req, Rep>
    {
        let first = request_message(
            request,
            vec![element_class::<Req>(), STREAM_OBSERVER.to_owned()],
        );
        let call =
            first.map(|m| self.wrapper_call(method, StreamKind::Server, MessageStream::once(m)));
        async move { replies(call?.await?).map(Outbound::from) }
    }

    /// Calls client-streaming wrapper-mode method number `method` with `requests`:
    /// the one reply.
    pub fn wrapper_client_streaming<
        Req: JavaType + Send + 'static,
        Rep: DeserializeOwned + 'static,
    >(
        &self,
        method: usize,
        requests: Streaming<Req>,
    ) -> impl Future<Output = Result<Rep, RpcError>> + Send + 'static + use<Req, Rep> {
        let messages = Outbound::from(requests).encode_with(encode_request::<Req>);
        let call = self.wrapper_call(method, StreamKind::Client, messages);
        async move {
            let mut replies = replies::<Rep>(call.await?)?;
            replies.message().await?.ok_or_else(|| {
                RpcError::serialization("the client-streaming call ended with no reply")
            })
        }
    }

    /// Calls bidirectional-streaming wrapper-mode method number `method` with
    /// `requests`: the replies as they come.
    pub fn wrapper_bidi_streaming<
        Req: JavaType + Send + 'static,
        Rep: DeserializeOwned + Send + 'static,
    >(
        &self,
        method: usize,
        requests: Streaming<Req>,
    ) -> impl Future<Output = Result<Outbound<Rep>, RpcError>> + Send + 'static + use<Req, Rep>
    {
        let messages = Outbound::from(requests).encode_with(encode_request::<Req>);
        let call = self.wrapper_call(method, StreamKind::Bidi, messages);
        async move { replies(call.await?).map(Outbound::from) }
    }
}

/// The request stream of a wrapper-mode streaming call: Triple only.
fn request_stream(invocation: &mut Invocation) -> Result<MessageStream, RpcError> {
    let stream = match invocation.arguments() {
        Arguments::Stream(slot) => slot.take(),
        _ => Err(RpcError::new(
            rubbo_common::ErrorKind::Forbidden,
            format!(
                "{} is a streaming method (StreamObserver): it is served over Triple \
                 (tri://) only, as in Java Dubbo",
                invocation.method()
            ),
        )),
    };
    *invocation.arguments_mut() = Arguments::none();
    stream
}

fn status_of(e: RpcError) -> Status {
    Status::from_error(&e)
}

fn stream_payload<Rep: JavaType + Send + 'static>(replies: Outbound<Rep>) -> Payload {
    Payload::Stream(StreamSlot::new(
        StreamKind::Server,
        replies.encode_with(encode_reply::<Rep>),
    ))
}

fn reply_payload(reply: Bytes) -> Payload {
    Payload::Encoded(Encoded::new(&PROTOBUF, reply))
}

/// Runs the handler of a server-streaming wrapper-mode method: reads the one request
/// message, runs `handler` on it, and sends the replies it returns.
pub fn serve_wrapper_server_streaming<Req, Rep, H, F>(
    mut invocation: Invocation,
    handler: H,
) -> InvokeFuture
where
    Req: DeserializeOwned + 'static,
    Rep: JavaType + Send + 'static,
    H: FnOnce(Req) -> F + Send + 'static,
    F: Future<Output = Result<Outbound<Rep>, RpcError>> + Send + 'static,
{
    let requests = match request_stream(&mut invocation) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let handler = async move {
        let mut requests = Streaming::<Req>::with_decoder(requests, decode_request::<Req>);
        let request = requests
            .message()
            .await?
            .ok_or_else(|| Status::internal("the server-streaming call sent no request message"))?;
        handler(request).await.map_err(status_of)
    };
    serve_handler(invocation, handler, stream_payload::<Rep>)
}

/// Runs the handler of a client-streaming wrapper-mode method: `handler` reads the
/// request messages as they come and returns the one reply.
pub fn serve_wrapper_client_streaming<Req, Rep, H, F>(
    mut invocation: Invocation,
    handler: H,
) -> InvokeFuture
where
    Req: DeserializeOwned + 'static,
    Rep: JavaType + Send + 'static,
    H: FnOnce(Streaming<Req>) -> F,
    F: Future<Output = Result<Rep, RpcError>> + Send + 'static,
{
    let requests = match request_stream(&mut invocation) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let handler = handler(Streaming::with_decoder(requests, decode_request::<Req>));
    serve_handler(
        invocation,
        async move { handler.await.map_err(status_of).and_then(encode_reply) },
        reply_payload,
    )
}

/// Runs the handler of a bidirectional-streaming wrapper-mode method: `handler` gets
/// the request messages as they come and returns the replies.
pub fn serve_wrapper_bidi_streaming<Req, Rep, H, F>(
    mut invocation: Invocation,
    handler: H,
) -> InvokeFuture
where
    Req: DeserializeOwned + 'static,
    Rep: JavaType + Send + 'static,
    H: FnOnce(Streaming<Req>) -> F,
    F: Future<Output = Result<Outbound<Rep>, RpcError>> + Send + 'static,
{
    let requests = match request_stream(&mut invocation) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let handler = handler(Streaming::with_decoder(requests, decode_request::<Req>));
    serve_handler(
        invocation,
        async move { handler.await.map_err(status_of) },
        stream_payload::<Rep>,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_what_java_writes() {
        // A client/bidi request: one hessian2 string, argTypes the element class.
        let m = encode_request("world".to_owned()).unwrap();
        assert_eq!(
            &m[..],
            b"\x0a\x08hessian4\x12\x06\x05world\x1a\x10java.lang.String"
        );
        assert_eq!(decode_request::<String>(m).unwrap(), "world");
        // A server-streaming request has two argTypes for its one argument.
        let m =
            request_message(7i32, vec![element_class::<i32>(), STREAM_OBSERVER.into()]).unwrap();
        let w = TripleRequestWrapper::decode_stream_message(m.clone()).unwrap();
        assert_eq!(w.arg_types, ["java.lang.Integer", STREAM_OBSERVER]);
        assert!(TripleRequestWrapper::decode_strict(m).is_err());
        let r = encode_reply("hi".to_owned()).unwrap();
        let w = TripleResponseWrapper::decode_strict(r.clone()).unwrap();
        assert_eq!(
            (w.serialize_type.as_str(), w.r#type.as_str()),
            ("hessian4", "java.lang.String")
        );
        assert_eq!(decode_reply::<String>(r).unwrap(), "hi");
    }
}
