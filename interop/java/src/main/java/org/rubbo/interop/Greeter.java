package org.rubbo.interop;

import org.rubbo.interop.proto.GreetReply;
import org.rubbo.interop.proto.GreetRequest;

/**
 * The contract's {@code org.rubbo.interop.Greeter} (CONTRACT.md section 2), unary part, as a plain
 * Dubbo interface in Triple's IDL mode: the parameter and the result are protobuf messages, so
 * Dubbo 3.3 sends them bare ({@code ReflectionPackableMethod.needWrap} is false), with no
 * {@code TripleRequestWrapper}. The interface's name is the proto's {@code package.Service}, and the
 * method keeps the proto's spelling {@code Greet}: Dubbo puts the Java method name in {@code :path}
 * ({@code /org.rubbo.interop.Greeter/Greet}), as dubbo-compiler's stubs and gRPC clients do.
 */
public interface Greeter {
    /** gRPC service name, {@code package.Service} of greeter.proto. */
    String SERVICE_NAME = "org.rubbo.interop.Greeter";

    /** {@code "Hello, <name>"} with the payload echoed; name {@code "error"} fails INVALID_ARGUMENT "bad name". */
    @SuppressWarnings("checkstyle:MethodName")
    GreetReply Greet(GreetRequest request);
}
