package org.rubbo.interop;

import java.util.ArrayList;
import java.util.List;

import org.apache.dubbo.common.stream.StreamObserver;
import org.apache.dubbo.rpc.TriRpcStatus;

/** {@link StreamService}'s behaviour (the Rust side is {@code examples/interop/src/stream_service.rs}). */
public final class StreamServiceImpl implements StreamService {
    private static final InteropServiceImpl USERS = new InteropServiceImpl("", "", 0);

    static GreeterImpl.StatusException badName() {
        return new GreeterImpl.StatusException(TriRpcStatus.fromCode(TriRpcStatus.Code.INVALID_ARGUMENT)
                .withDescription(GreeterImpl.ERROR_MESSAGE));
    }

    @Override
    public void users(int n, StreamObserver<User> users) {
        for (User u : USERS.listUsers(Math.abs(n))) {
            users.onNext(u);
        }
        if (n < 0) {
            users.onError(badName());
        } else {
            users.onCompleted();
        }
    }

    @Override
    public StreamObserver<String> join(StreamObserver<String> joined) {
        return new StreamObserver<String>() {
            private final List<String> words = new ArrayList<>();
            private boolean failed;

            @Override
            public void onNext(String w) {
                if (failed) {
                    return;
                }
                if (ERROR_NAME.equals(w)) {
                    failed = true;
                    joined.onError(badName());
                    return;
                }
                words.add(w == null ? "" : w);
            }

            @Override
            public void onError(Throwable t) {
                failed = true;
            }

            @Override
            public void onCompleted() {
                if (!failed) {
                    joined.onNext(String.join(",", words));
                    joined.onCompleted();
                }
            }
        };
    }

    @Override
    public StreamObserver<String> echo(StreamObserver<String> echoes) {
        return new StreamObserver<String>() {
            private int index;
            private boolean failed;

            @Override
            public void onNext(String w) {
                if (failed) {
                    return;
                }
                if (ERROR_NAME.equals(w)) {
                    failed = true;
                    echoes.onError(badName());
                    return;
                }
                echoes.onNext(index++ + ":" + (w == null ? "" : w));
            }

            @Override
            public void onError(Throwable t) {
                failed = true;
            }

            @Override
            public void onCompleted() {
                if (!failed) {
                    echoes.onCompleted();
                }
            }
        };
    }
}
