package org.rubbo.interop;

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
