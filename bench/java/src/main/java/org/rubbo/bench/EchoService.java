package org.rubbo.bench;

import org.rubbo.interop.User;

/** {@code org.rubbo.bench.EchoService:1.0.0}, served by {@link BenchProvider} and by {@code rubbo bench-server}. */
public interface EchoService {
    /** Answers {@code s}. */
    String echo(String s);

    /** Answers {@code u}: the interop contract's {@code User} (shared/interop/CONTRACT.md). */
    User echoUser(User u);
}
