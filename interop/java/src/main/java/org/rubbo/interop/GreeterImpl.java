package org.rubbo.interop;

import java.util.ArrayList;
import java.util.List;

import org.apache.dubbo.common.stream.StreamObserver;
import org.apache.dubbo.rpc.StatusRpcException;
import org.apache.dubbo.rpc.TriRpcStatus;
import org.rubbo.interop.proto.GreetReply;
import org.rubbo.interop.proto.GreetRequest;

/** The contract's Greeter behaviour (CONTRACT.md section 2). */
public final class GreeterImpl implements Greeter {
    /** Name that makes every method fail. */
    static final String ERROR_NAME = "error";
    /** Message of that failure (gRPC status INVALID_ARGUMENT). */
    static final String ERROR_MESSAGE = "bad name";

    @Override
    public GreetReply Greet(GreetRequest request) {
        if (ERROR_NAME.equals(request.getName())) {
            throw new StatusException(TriRpcStatus.fromCode(TriRpcStatus.Code.INVALID_ARGUMENT)
                    .withDescription(ERROR_MESSAGE));
        }
        return GreetReply.newBuilder()
                .setMessage("Hello, " + request.getName())
                .setIndex(0)
                .setPayload(request.getPayload())
                .build();
    }

    static StatusException badName() {
        return new StatusException(TriRpcStatus.fromCode(TriRpcStatus.Code.INVALID_ARGUMENT)
                .withDescription(ERROR_MESSAGE));
    }

    @Override
    public void GreetServerStream(GreetRequest request, StreamObserver<GreetReply> replies) {
        if (ERROR_NAME.equals(request.getName())) {
            replies.onError(badName());
            return;
        }
        for (int i = 0; i < request.getRepeat(); i++) {
            replies.onNext(GreetReply.newBuilder()
                    .setMessage("Hello, " + request.getName())
                    .setIndex(i)
                    .setPayload(request.getPayload())
                    .build());
        }
        replies.onCompleted();
    }

    @Override
    public StreamObserver<GreetRequest> GreetClientStream(StreamObserver<GreetReply> reply) {
        return new StreamObserver<GreetRequest>() {
            private final List<String> names = new ArrayList<>();
            private boolean failed;

            @Override
            public void onNext(GreetRequest r) {
                if (failed) {
                    return;
                }
                if (ERROR_NAME.equals(r.getName())) {
                    failed = true;
                    reply.onError(badName());
                    return;
                }
                names.add(r.getName());
            }

            @Override
            public void onError(Throwable t) {
                failed = true;
            }

            @Override
            public void onCompleted() {
                if (!failed) {
                    reply.onNext(GreetReply.newBuilder().setMessage(String.join(",", names)).build());
                    reply.onCompleted();
                }
            }
        };
    }

    @Override
    public StreamObserver<GreetRequest> GreetBidi(StreamObserver<GreetReply> replies) {
        return new StreamObserver<GreetRequest>() {
            private int index;
            private boolean failed;

            @Override
            public void onNext(GreetRequest r) {
                if (failed) {
                    return;
                }
                if (ERROR_NAME.equals(r.getName())) {
                    failed = true;
                    replies.onError(badName());
                    return;
                }
                replies.onNext(GreetReply.newBuilder()
                        .setMessage("Hello, " + r.getName())
                        .setIndex(index++)
                        .setPayload(r.getPayload())
                        .build());
            }

            @Override
            public void onError(Throwable t) {
                failed = true;
            }

            @Override
            public void onCompleted() {
                if (!failed) {
                    replies.onCompleted();
                }
            }
        };
    }

    /**
     * A status whose {@code grpc-message} is exactly its description. Dubbo 3.3.6's server writes
     * {@code grpc-status} from the status and {@code grpc-message} from {@code Throwable.getMessage()}
     * ({@code CompositeExceptionHandler.resolveGrpcStatus}); a plain {@code TriRpcStatus.asException()}
     * has the message {@code "INVALID_ARGUMENT : bad name"}, which would put the code name on the
     * wire as well. The contract's consumer must see {@code "bad name"}.
     */
    static final class StatusException extends StatusRpcException {
        private static final long serialVersionUID = 1L;

        StatusException(TriRpcStatus status) {
            super(status);
        }

        @Override
        public String getMessage() {
            return getStatus().description;
        }
    }
}
