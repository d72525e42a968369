package org.rubbo.interop;

import org.apache.dubbo.common.stream.StreamObserver;
import org.rubbo.interop.proto.GreetReply;
import org.rubbo.interop.proto.GreetRequest;

/**
 * The contract's {@code org.rubbo.interop.Greeter} (CONTRACT.md section 2) as a plain
 * Dubbo interface in Triple's IDL mode: the parameter and the result are protobuf messages, so
 * Dubbo 3.3 sends them bare ({@code ReflectionPackableMethod.needWrap} is false), with no
 * {@code TripleRequestWrapper}. The interface's name is the proto's {@code package.Service}, and the
 * method keeps the proto's spelling {@code Greet}: Dubbo puts the Java method name in {@code :path}
 * ({@code /org.rubbo.interop.Greeter/Greet}), as dubbo-compiler's stubs and gRPC clients do.
 *
 * <p>The streaming rpcs take Java's reflection shapes ({@code ReflectionMethodDescriptor}):
 * {@code void m(Req, StreamObserver<Rep>)} is server streaming and {@code StreamObserver<Req>
 * m(StreamObserver<Rep>)} bidirectional. Only IDL stubs can mark a method client streaming, so
 * {@code GreetClientStream} is bidirectional here and answers once, at the half-close: the same
 * HTTP/2 exchange as a gRPC client-streaming call. All are protobuf, so unwrapped.
 */
public interface Greeter {
    /** gRPC service name, {@code package.Service} of greeter.proto. */
    String SERVICE_NAME = "org.rubbo.interop.Greeter";

    /** {@code "Hello, <name>"} with the payload echoed; name {@code "error"} fails INVALID_ARGUMENT "bad name". */
    @SuppressWarnings("checkstyle:MethodName")
    GreetReply Greet(GreetRequest request);

    /** {@code repeat} replies, index 0..repeat-1; name {@code "error"} fails at once. */
    @SuppressWarnings("checkstyle:MethodName")
    void GreetServerStream(GreetRequest request, StreamObserver<GreetReply> replies);

    /** One reply at the half-close: the names joined by {@code ","}; {@code "error"} fails the call. */
    @SuppressWarnings("checkstyle:MethodName")
    StreamObserver<GreetRequest> GreetClientStream(StreamObserver<GreetReply> reply);

    /** One reply per request, at once, index = its position; {@code "error"} fails the stream there. */
    @SuppressWarnings("checkstyle:MethodName")
    StreamObserver<GreetRequest> GreetBidi(StreamObserver<GreetReply> replies);
}
