package org.rubbo.bench;

import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import org.apache.dubbo.config.ApplicationConfig;
import org.apache.dubbo.config.ReferenceConfig;
import org.apache.dubbo.config.RegistryConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;
import org.apache.dubbo.rpc.RpcContext;

/**
 * An async Java Dubbo 3.3.6 load client of {@code org.rubbo.bench.EchoService:1.0.0}: a fixed
 * number of calls in flight on one connection (Dubbo's shared connection, or Triple's one HTTP/2
 * connection), each completion starting the next call (closed loop), as {@code rubbo bench -c}.
 *
 * <pre>
 *   BenchClient --url dubbo://127.0.0.1:P | tri://127.0.0.1:P --payload BYTES --inflight C
 *               --duration-ms D [--warmup-ms W] [--timeout-ms 3000]
 * </pre>
 *
 * Prints one JSON line: calls, ok, failed, elapsed_s, calls_per_s, latency (p50/p90/p99/p999/max
 * in µs), the shape of {@code rubbo bench --json}. Exit 1 when a call failed.
 */
public final class BenchClient {
    private final EchoService service;
    private final String payload;
    private final long measureStart;
    private final long measureEnd;
    private final CountDownLatch callers;
    private final Recorder latencies = new Recorder(3);
    private final AtomicLong ok = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong lastDone = new AtomicLong();
    private final AtomicLong warmupCalls = new AtomicLong();
    /** Restarts a caller after a call that failed at once (no recursion on a dead peer). */
    private final ExecutorService restarts = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "bench-restart");
        t.setDaemon(true);
        return t;
    });

    private BenchClient(EchoService service, String payload, long measureStart, long measureEnd, int inflight) {
        this.service = service;
        this.payload = payload;
        this.measureStart = measureStart;
        this.measureEnd = measureEnd;
        this.callers = new CountDownLatch(inflight);
    }

    private void call() {
        long t0 = System.nanoTime();
        if (t0 >= measureEnd) {
            callers.countDown();
            return;
        }
        CompletableFuture<String> f;
        try {
            service.echo(payload);
            f = RpcContext.getServiceContext().getCompletableFuture();
        } catch (RuntimeException e) {
            f = CompletableFuture.failedFuture(e);
        }
        f.whenComplete((r, e) -> {
            long t1 = System.nanoTime();
            boolean good = e == null && r != null && r.length() == payload.length();
            if (t0 >= measureStart) {
                if (good) {
                    latencies.recordValue(Math.max(1, t1 - t0));
                    ok.incrementAndGet();
                } else {
                    failed.incrementAndGet();
                }
                lastDone.accumulateAndGet(t1, Math::max);
            } else {
                warmupCalls.incrementAndGet();
            }
            if (good) {
                call();
            } else {
                restarts.execute(this::call);
            }
        });
    }

    public static void main(String[] argv) throws Exception {
        System.setProperty("java.net.preferIPv4Stack", "true");
        Args args = Args.parse(argv);
        String url = args.require("url");
        int payloadLen = args.getInt("payload", 16);
        int inflight = args.getInt("inflight", 1);
        long durationMs = args.getInt("duration-ms", 5000);
        long warmupMs = args.getInt("warmup-ms", 0);
        int timeoutMs = args.getInt("timeout-ms", 3000);
        LoopbackBind.pinLocalHost("127.0.0.1");

        ApplicationConfig app = new ApplicationConfig("bench-java-client");
        app.setQosEnable(false);
        app.setLogger("slf4j");
        ReferenceConfig<EchoService> ref = new ReferenceConfig<>();
        ref.setInterface(EchoService.class);
        ref.setVersion("1.0.0");
        ref.setUrl(url + "/" + EchoService.class.getName());
        ref.setTimeout(timeoutMs);
        ref.setRetries(0);
        ref.setAsync(true);
        DubboBootstrap bootstrap = DubboBootstrap.getInstance()
                .application(app)
                .registry(new RegistryConfig(RegistryConfig.NO_AVAILABLE))
                .reference(ref);
        bootstrap.start();
        EchoService service = ref.get();

        String payload = "x".repeat(payloadLen);
        long start = System.nanoTime();
        long measureStart = start + TimeUnit.MILLISECONDS.toNanos(warmupMs);
        long measureEnd = measureStart + TimeUnit.MILLISECONDS.toNanos(durationMs);
        BenchClient client = new BenchClient(service, payload, measureStart, measureEnd, inflight);
        for (int i = 0; i < inflight; i++) {
            client.call();
        }
        // This process's CPU time while measuring (all threads: Dubbo's and the JVM's).
        long untilMeasure = measureStart - System.nanoTime();
        if (untilMeasure > 0) {
            TimeUnit.NANOSECONDS.sleep(untilMeasure);
        }
        com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean)
                java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        long cpuBefore = os.getProcessCpuTime();
        boolean ended = client.callers.await(warmupMs + durationMs + 2L * timeoutMs + 5000, TimeUnit.MILLISECONDS);
        double cpu = (os.getProcessCpuTime() - cpuBefore) / 1e9;
        Histogram h = client.latencies.getIntervalHistogram();
        long last = Math.max(client.lastDone.get(), measureStart + 1);
        double elapsed = (last - measureStart) / 1e9;
        long okCalls = client.ok.get();
        long failedCalls = client.failed.get();
        System.out.println(String.format(Locale.ROOT,
                "{\"client\":\"java\",\"target\":\"%s\",\"concurrency\":%d,\"calls\":%d,\"ok\":%d,\"failed\":%d,"
                        + "\"elapsed_s\":%.6f,\"cpu_s\":%.6f,\"warmup_calls\":%d,\"calls_per_s\":%.1f,\"latency\":{\"p50_us\":%.3f,\"p90_us\":%.3f,"
                        + "\"p99_us\":%.3f,\"p999_us\":%.3f,\"max_us\":%.3f,\"mean_us\":%.3f},\"ended\":%b}",
                url, inflight, okCalls + failedCalls, okCalls, failedCalls, elapsed, cpu, client.warmupCalls.get(), (okCalls + failedCalls) / elapsed,
                h.getValueAtPercentile(50) / 1e3, h.getValueAtPercentile(90) / 1e3,
                h.getValueAtPercentile(99) / 1e3, h.getValueAtPercentile(99.9) / 1e3,
                h.getMaxValue() / 1e3, h.getMean() / 1e3, ended));
        System.out.flush();
        // Dubbo's shutdown hook closes the connection; no need to wait for it.
        Runtime.getRuntime().halt(failedCalls == 0 && ended ? 0 : 1);
    }
}
