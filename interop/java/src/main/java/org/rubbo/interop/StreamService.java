package org.rubbo.interop;

import org.apache.dubbo.common.stream.StreamObserver;

/**
 * An interop-only service (not in CONTRACT.md): streams in Triple's wrapper mode, a plain Java
 * interface with {@link StreamObserver} parameters, so each message is a hessian2 value inside a
 * {@code TripleRequestWrapper} / {@code TripleResponseWrapper}. Interface
 * {@code org.rubbo.interop.StreamService}, no version, Triple only. The Rust side is
 * {@code examples/interop/src/stream_service.rs}.
 */
public interface StreamService {
    /** Gives {@link #ERROR_NAME} to fail a stream with INVALID_ARGUMENT "bad name". */
    String ERROR_NAME = "error";

    /**
     * Server streaming: users {@code 0..|n|-1} as {@code listUsers} builds them (CONTRACT.md), then
     * the end; for a negative {@code n}, those users then INVALID_ARGUMENT "bad name".
     */
    void users(int n, StreamObserver<User> users);

    /**
     * Client streaming (bidirectional to Java's reflection, one reply at the half-close): the words
     * joined by {@code ","}; the word {@code "error"} fails the call with INVALID_ARGUMENT "bad name".
     */
    StreamObserver<String> join(StreamObserver<String> joined);

    /**
     * Bidirectional: each word back at once, as {@code "<i>:<word>"} (i = its position); the word
     * {@code "error"} fails the stream there with INVALID_ARGUMENT "bad name".
     */
    StreamObserver<String> echo(StreamObserver<String> echoes);
}
