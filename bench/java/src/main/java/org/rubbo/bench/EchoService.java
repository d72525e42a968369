package org.rubbo.bench;

/** {@code org.rubbo.bench.EchoService:1.0.0}, served by {@link BenchProvider} and by {@code rubbo bench-server}. */
public interface EchoService {
    /** Answers {@code s}. */
    String echo(String s);
}
