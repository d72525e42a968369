package org.rubbo.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
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
import org.rubbo.interop.User;

/**
 * An async Java Dubbo 3.3.6 load client of {@code org.rubbo.bench.EchoService:1.0.0}: a fixed
 * number of calls in flight on one connection (Dubbo's shared connection, or Triple's one HTTP/2
 * connection), each completion starting the next call (closed loop), as {@code rubbo bench -c}.
 *
 * <pre>
 *   BenchClient --url dubbo://127.0.0.1:P | tri://127.0.0.1:P [--timeout-ms 3000]
 * </pre>
 *
 * One long-lived JVM runs many cells, so that they measure a JIT that has seen load, not a cold
 * one: it connects, prints {@code READY}, then reads commands from stdin, one a line,
 *
 * <pre>
 *   run PAYLOAD INFLIGHT WARMUP_MS DURATION_MS     PAYLOAD: a length in bytes (echo) or "user" (echoUser)
 * </pre>
 *
 * and answers each with one JSON line: calls, ok, failed, elapsed_s, cpu_s, warmup_calls,
 * calls_per_s, latency (p50/p90/p99/p999/max in µs), the shape of {@code rubbo bench --json}. It
 * exits at end of input or {@code quit}.
 */
public final class BenchClient {
    /** Restarts a caller after a call that failed at once (no recursion on a dead peer). */
    private static final ExecutorService RESTARTS = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "bench-restart");
        t.setDaemon(true);
        return t;
    });

    /** One cell's run: its callers and counts. */
    private static final class Cell {
        private final EchoService service;
        private final String text;
        private final User user;
        private final long measureStart;
        private final long measureEnd;
        private final CountDownLatch callers;
        private final Recorder latencies = new Recorder(3);
        private final AtomicLong ok = new AtomicLong();
        private final AtomicLong failed = new AtomicLong();
        private final AtomicLong lastDone = new AtomicLong();
        private final AtomicLong warmupCalls = new AtomicLong();

        Cell(EchoService service, String text, User user, long measureStart, long measureEnd, int inflight) {
            this.service = service;
            this.text = text;
            this.user = user;
            this.measureStart = measureStart;
            this.measureEnd = measureEnd;
            this.callers = new CountDownLatch(inflight);
        }

        void call() {
            long t0 = System.nanoTime();
            if (t0 >= measureEnd) {
                callers.countDown();
                return;
            }
            CompletableFuture<?> f;
            try {
                if (user != null) {
                    service.echoUser(user);
                } else {
                    service.echo(text);
                }
                f = RpcContext.getServiceContext().getCompletableFuture();
            } catch (RuntimeException e) {
                f = CompletableFuture.failedFuture(e);
            }
            f.whenComplete((r, e) -> {
                long t1 = System.nanoTime();
                boolean good = e == null && (user != null
                        ? r instanceof User && ((User) r).getId() == user.getId()
                        : r instanceof String && ((String) r).length() == text.length());
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
                    RESTARTS.execute(this::call);
                }
            });
        }
    }

    private BenchClient() {}

    /** Runs one cell and returns its JSON line. */
    private static String run(EchoService service, String url, String payload, int inflight,
                              long warmupMs, long durationMs, int timeoutMs) throws InterruptedException {
        User user = payload.equals("user") ? User.contractUser(1) : null;
        String text = user == null ? "x".repeat(Integer.parseInt(payload)) : null;
        long start = System.nanoTime();
        long measureStart = start + TimeUnit.MILLISECONDS.toNanos(warmupMs);
        long measureEnd = measureStart + TimeUnit.MILLISECONDS.toNanos(durationMs);
        Cell cell = new Cell(service, text, user, measureStart, measureEnd, inflight);
        for (int i = 0; i < inflight; i++) {
            cell.call();
        }
        // This process's CPU time while measuring (all threads: Dubbo's and the JVM's).
        long untilMeasure = measureStart - System.nanoTime();
        if (untilMeasure > 0) {
            TimeUnit.NANOSECONDS.sleep(untilMeasure);
        }
        com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean)
                java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        long cpuBefore = os.getProcessCpuTime();
        boolean ended = cell.callers.await(warmupMs + durationMs + 2L * timeoutMs + 5000, TimeUnit.MILLISECONDS);
        double cpu = (os.getProcessCpuTime() - cpuBefore) / 1e9;
        Histogram h = cell.latencies.getIntervalHistogram();
        long last = Math.max(cell.lastDone.get(), measureStart + 1);
        double elapsed = (last - measureStart) / 1e9;
        long okCalls = cell.ok.get();
        long failedCalls = cell.failed.get();
        return String.format(Locale.ROOT,
                "{\"client\":\"java\",\"target\":\"%s\",\"payload\":\"%s\",\"concurrency\":%d,\"calls\":%d,\"ok\":%d,"
                        + "\"failed\":%d,\"elapsed_s\":%.6f,\"cpu_s\":%.6f,\"warmup_calls\":%d,\"calls_per_s\":%.1f,"
                        + "\"latency\":{\"p50_us\":%.3f,\"p90_us\":%.3f,\"p99_us\":%.3f,\"p999_us\":%.3f,"
                        + "\"max_us\":%.3f,\"mean_us\":%.3f},\"ended\":%b}",
                url, payload, inflight, okCalls + failedCalls, okCalls, failedCalls, elapsed, cpu,
                cell.warmupCalls.get(), (okCalls + failedCalls) / elapsed,
                h.getValueAtPercentile(50) / 1e3, h.getValueAtPercentile(90) / 1e3,
                h.getValueAtPercentile(99) / 1e3, h.getValueAtPercentile(99.9) / 1e3,
                h.getMaxValue() / 1e3, h.getMean() / 1e3, ended);
    }

    public static void main(String[] argv) throws Exception {
        System.setProperty("java.net.preferIPv4Stack", "true");
        Args args = Args.parse(argv);
        String url = args.require("url");
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
        System.out.println("READY client " + url);
        System.out.flush();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        int status = 0;
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split("\\s+");
            if (w[0].equals("quit")) {
                break;
            }
            if (!w[0].equals("run") || w.length != 5) {
                System.out.println("{\"error\":\"expected: run PAYLOAD INFLIGHT WARMUP_MS DURATION_MS\"}");
                System.out.flush();
                status = 1;
                continue;
            }
            System.out.println(run(service, url, w[1], Integer.parseInt(w[2]), Long.parseLong(w[3]),
                    Long.parseLong(w[4]), timeoutMs));
            System.out.flush();
        }
        // Dubbo's shutdown hook closes the connection; no need to wait for it.
        Runtime.getRuntime().halt(status);
    }
}
