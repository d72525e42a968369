package org.rubbo.interop;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

import org.apache.dubbo.config.ApplicationConfig;
import org.apache.dubbo.config.ReferenceConfig;
import org.apache.dubbo.config.RegistryConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;

/**
 * A Java consumer of InteropService, through a registry, under steady load ({@code --threads}
 * calls of {@code whoami} in flight the whole run) while one provider is taken out with the
 * QoS {@code offline} command over HTTP (as {@code curl http://127.0.0.1:<qos>/offline}) and
 * brought back with {@code online} in the port's telnet form (as {@code telnet 127.0.0.1 <qos>}).
 * The provider unregisters, so this consumer's address list loses it and it gets no more calls;
 * no call may fail meanwhile; after {@code online} it is called again.
 *
 * <pre>
 *   run-java.sh QosOfflineConsumer --registry zookeeper://127.0.0.1:2181 \
 *       --offline 127.0.0.1:20880 --qos 127.0.0.1:22222 --keep 127.0.0.1:20881 \
 *       [--threads 8] [--timeout 3000] [--wait 30000] [--quiet 300]
 * </pre>
 *
 * "Stopped calling it" is a condition, not a sleep: {@code --quiet} calls in a row answered by
 * the other provider and none by the offline one. {@code whoami} answers
 * {@code <application>@<host>:<port>}: its suffix names the provider. Prints {@code PASS name}
 * / {@code FAIL name: detail} and {@code INFO} lines, then {@code N passed, N failed}.
 */
public final class QosOfflineConsumer {
    private final PrintStream out = System.out;
    private int passed;
    private int failed;

    private final Map<String, LongAdder> answers = new ConcurrentHashMap<>();
    private final LongAdder calls = new LongAdder();
    private final LongAdder failures = new LongAdder();
    private final AtomicReference<String> lastFailure = new AtomicReference<>();
    private final AtomicBoolean stop = new AtomicBoolean();

    private void result(String name, boolean ok, String detail) {
        synchronized (out) {
            if (ok) {
                passed++;
                out.println("PASS " + name);
            } else {
                failed++;
                out.println("FAIL " + name + ": " + detail);
            }
            out.flush();
        }
    }

    private void info(String line) {
        synchronized (out) {
            out.println("INFO " + line);
            out.flush();
        }
    }

    /** Answers by the provider at {@code addr} so far. */
    private long answeredBy(String addr) {
        long n = 0;
        for (Map.Entry<String, LongAdder> e : answers.entrySet()) {
            if (e.getKey().endsWith("@" + addr)) {
                n += e.getValue().sum();
            }
        }
        return n;
    }

    private void load(InteropService svc) {
        while (!stop.get()) {
            try {
                String who = svc.whoami();
                answers.computeIfAbsent(String.valueOf(who), k -> new LongAdder()).increment();
            } catch (Throwable t) {
                failures.increment();
                lastFailure.set(t.toString());
            }
            calls.increment();
        }
    }

    /** Polls (every 20 ms, at most {@code waitMs}) until {@code cond} holds. */
    private static boolean eventually(long waitMs, java.util.function.BooleanSupplier cond) throws InterruptedException {
        long deadline = System.currentTimeMillis() + waitMs;
        while (System.currentTimeMillis() < deadline) {
            if (cond.getAsBoolean()) {
                return true;
            }
            Thread.sleep(20);
        }
        return cond.getAsBoolean();
    }

    /**
     * Waits (at most {@code waitMs}) for a window of {@code quiet} answers by {@code keep} with
     * none by {@code gone}; returns the milliseconds it took, or -1.
     */
    private long quietWindow(String gone, String keep, int quiet, long waitMs) throws InterruptedException {
        long start = System.currentTimeMillis();
        long deadline = start + waitMs;
        while (System.currentTimeMillis() < deadline) {
            long g = answeredBy(gone);
            long k = answeredBy(keep);
            eventually(deadline - System.currentTimeMillis(),
                    () -> answeredBy(gone) != g || answeredBy(keep) >= k + quiet);
            if (answeredBy(gone) == g && answeredBy(keep) >= k + quiet) {
                return System.currentTimeMillis() - start;
            }
        }
        return -1;
    }

    /** GET http://{qos}/{command}: "status body". */
    private static String qos(HttpClient http, String qos, String command) {
        try {
            HttpResponse<String> r = http.send(
                    HttpRequest.newBuilder(URI.create("http://" + qos + "/" + command))
                            .timeout(Duration.ofSeconds(10))
                            .GET()
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            return r.statusCode() + " " + r.body().trim();
        } catch (Exception e) {
            return "error " + e;
        }
    }

    /**
     * {@code command} in the QoS port's telnet form: waits for the first {@code dubbo>} prompt
     * (after the logo), sends the line, answers the text up to the next prompt (bounded).
     */
    private static String telnet(String qos, String command) {
        int colon = qos.lastIndexOf(':');
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(qos.substring(0, colon), Integer.parseInt(qos.substring(colon + 1))), 5000);
            s.setSoTimeout(10000);
            InputStream in = s.getInputStream();
            OutputStream out = s.getOutputStream();
            if (readToPrompt(in) == null) {
                return "error: no prompt";
            }
            out.write((command + "\r\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
            String answer = readToPrompt(in);
            return answer == null ? "error: no prompt after the answer" : answer.trim();
        } catch (IOException | RuntimeException e) {
            return "error " + e;
        }
    }

    /** The text before the next {@code dubbo>}; null at the end of the stream. */
    private static String readToPrompt(InputStream in) throws IOException {
        StringBuilder got = new StringBuilder();
        byte[] buf = new byte[1024];
        while (got.indexOf("dubbo>") < 0) {
            int n = in.read(buf);
            if (n < 0) {
                return null;
            }
            got.append(new String(buf, 0, n, StandardCharsets.UTF_8));
        }
        return got.substring(0, got.indexOf("dubbo>"));
    }

    private int run(Args args) throws Exception {
        String registry = args.registry();
        String gone = args.get("offline", null);
        String qos = args.get("qos", null);
        String keep = args.get("keep", null);
        if (registry == null || gone == null || qos == null || keep == null) {
            throw new IllegalArgumentException("need --registry, --offline, --qos and --keep");
        }
        int threads = args.getInt("threads", 8);
        int timeout = args.getInt("timeout", 3000);
        long wait = args.getInt("wait", 30000);
        int quiet = args.getInt("quiet", 300);
        LoopbackBind.pinLocalHost("127.0.0.1");
        System.setProperty("dubbo.application.service-discovery.migration", "FORCE_INTERFACE");
        ApplicationConfig app = new ApplicationConfig("interop-qos-consumer");
        app.setQosEnable(false);
        app.setLogger("slf4j");
        ReferenceConfig<InteropService> ref = new ReferenceConfig<>();
        ref.setInterface(InteropService.class);
        ref.setVersion("1.0.0");
        ref.setTimeout(timeout);
        // No retry: a call sent to a provider on its way out must not be hidden by failover.
        ref.setRetries(0);
        ref.setCheck(false);
        DubboBootstrap.getInstance()
                .application(app)
                .registry(new RegistryConfig(registry))
                .reference(ref)
                .start();
        InteropService svc = ref.get();

        List<Thread> workers = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            Thread t = new Thread(() -> load(svc), "qos-load-" + i);
            t.setDaemon(true);
            workers.add(t);
            t.start();
        }
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        try {
            boolean both = eventually(wait, () -> answeredBy(gone) > 0 && answeredBy(keep) > 0);
            result("qos-offline/both-rust-providers-called", both,
                    "answers " + answers + " (want " + gone + " and " + keep + ")");
            if (!both) {
                return 1;
            }
            String off = qos(http, qos, "offline");
            result("qos-offline/offline-over-http-answers-ok", off.equals("200 OK"), "got '" + off + "'");
            long took = quietWindow(gone, keep, quiet, wait);
            result("qos-offline/java-consumer-stops-calling-the-offline-provider", took >= 0,
                    "still calling " + gone + " (no " + quiet + " answers in a row by " + keep + " alone)");
            info("offline: " + quiet + " answers by " + keep + " and none by " + gone + " within " + took + " ms");
            long before = answeredBy(gone);
            String on = telnet(qos, "online");
            result("qos-offline/online-over-telnet-answers-ok", on.equals("OK"), "got '" + on + "'");
            long start = System.currentTimeMillis();
            boolean back = eventually(wait, () -> answeredBy(gone) > before);
            result("qos-offline/online-java-consumer-calls-it-again", back, "never called " + gone + " again");
            info("online: " + gone + " called again after " + (System.currentTimeMillis() - start) + " ms");
        } finally {
            stop.set(true);
            for (Thread t : workers) {
                t.join(timeout + 2000L);
            }
        }
        info("calls " + calls.sum() + ", answers " + answers + ", failures " + failures.sum());
        result("qos-offline/no-failed-call", failures.sum() == 0 && calls.sum() > 0,
                failures.sum() + " of " + calls.sum() + " failed, last: " + lastFailure.get());
        return failed == 0 ? 0 : 1;
    }

    public static void main(String[] argv) {
        System.setProperty("java.net.preferIPv4Stack", "true");
        Args args = Args.parse(argv);
        QosOfflineConsumer c = new QosOfflineConsumer();
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(args.getInt("deadline", 180000));
            } catch (InterruptedException e) {
                return;
            }
            c.result("deadline", false, "whole run exceeded the deadline");
            Runtime.getRuntime().halt(1);
        }, "qos-consumer-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        int code;
        try {
            code = c.run(args);
        } catch (Throwable t) {
            c.result("setup", false, t.getClass().getName() + ": " + t.getMessage());
            t.printStackTrace();
            code = 1;
        }
        System.out.println(c.passed + " passed, " + c.failed + " failed");
        System.out.flush();
        Thread stopper = new Thread(() -> {
            try {
                DubboBootstrap.getInstance().destroy();
            } catch (Throwable ignored) {
                // exiting anyway
            }
        }, "qos-consumer-stop");
        stopper.setDaemon(true);
        stopper.start();
        try {
            stopper.join(5000);
        } catch (InterruptedException ignored) {
            // exiting anyway
        }
        Runtime.getRuntime().halt(code);
    }
}
