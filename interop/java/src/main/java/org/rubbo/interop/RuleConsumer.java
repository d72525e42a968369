package org.rubbo.interop;

import java.io.PrintStream;

import org.apache.dubbo.common.config.configcenter.DynamicConfiguration;
import org.apache.dubbo.config.ApplicationConfig;
import org.apache.dubbo.config.ReferenceConfig;
import org.apache.dubbo.config.RegistryConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;

/**
 * A Java consumer of InteropService, through a registry, facing a provider-side override
 * rule written by Java's own {@code DynamicConfiguration} ({@link RuleWriter}): the rule
 * disables one provider ({@code parameters: {disabled: true}}, {@code side: provider}),
 * which the provider itself applies by registering again with {@code disabled=true} (Java's
 * consumer never applies a provider-side rule itself), so this consumer must stop calling
 * it; deleting the rule must bring it back. No call may fail meanwhile.
 *
 * <pre>
 *   run-java.sh RuleConsumer --registry zookeeper://127.0.0.1:2181 --zk 127.0.0.1:2181 \
 *       --disable 127.0.0.1:20880 --keep 127.0.0.1:20881 [--timeout 3000] [--wait 30000]
 * </pre>
 *
 * {@code whoami} answers {@code <application>@<host>:<port>}: its suffix names the provider.
 * Prints {@code PASS name} / {@code FAIL name: detail}, then {@code N passed, N failed}.
 */
public final class RuleConsumer {
    static final String KEY = "org.rubbo.interop.InteropService:1.0.0:.configurators";

    private final PrintStream out = System.out;
    private int passed;
    private int failed;
    private int failures;
    private String lastFailure;

    private void result(String name, boolean ok, String detail) {
        if (ok) {
            passed++;
            out.println("PASS " + name);
        } else {
            failed++;
            out.println("FAIL " + name + ": " + detail);
        }
        out.flush();
    }

    /** One whoami call; null (counted) when it failed. */
    private String call(InteropService svc) {
        try {
            return svc.whoami();
        } catch (Throwable t) {
            failures++;
            lastFailure = t.toString();
            return null;
        }
    }

    /** Calls until {@code run} consecutive answers all do (want=true) or do not name {@code addr}. */
    private boolean until(InteropService svc, String addr, boolean avoid, int run, long waitMs) {
        long deadline = System.currentTimeMillis() + waitMs;
        int streak = 0;
        while (System.currentTimeMillis() < deadline) {
            String who = call(svc);
            if (who == null) {
                streak = 0;
                continue;
            }
            boolean named = who.endsWith("@" + addr);
            if (avoid ? !named : named) {
                streak++;
                if (streak >= run) {
                    return true;
                }
            } else {
                streak = 0;
            }
        }
        return false;
    }

    static String rule(String addr) {
        return "configVersion: v3.0\n"
                + "scope: service\n"
                + "key: org.rubbo.interop.InteropService:1.0.0\n"
                + "enabled: true\n"
                + "configs:\n"
                + "  - side: provider\n"
                + "    addresses: [\"" + addr + "\"]\n"
                + "    parameters:\n"
                + "      disabled: true\n";
    }

    private int run(Args args) {
        String registry = args.registry();
        String zk = args.get("zk", null);
        String disable = args.get("disable", null);
        String keep = args.get("keep", null);
        if (registry == null || zk == null || disable == null || keep == null) {
            throw new IllegalArgumentException("need --registry, --zk, --disable and --keep");
        }
        int timeout = args.getInt("timeout", 3000);
        long wait = args.getInt("wait", 30000);
        LoopbackBind.pinLocalHost("127.0.0.1");
        System.setProperty("dubbo.application.service-discovery.migration", "FORCE_INTERFACE");
        ApplicationConfig app = new ApplicationConfig("interop-rule-consumer");
        app.setQosEnable(false);
        app.setLogger("slf4j");
        ReferenceConfig<InteropService> ref = new ReferenceConfig<>();
        ref.setInterface(InteropService.class);
        ref.setVersion("1.0.0");
        ref.setTimeout(timeout);
        ref.setRetries(0);
        ref.setCheck(false);
        DubboBootstrap.getInstance()
                .application(app)
                .registry(new RegistryConfig(registry))
                .reference(ref)
                .start();
        InteropService svc = ref.get();

        boolean both = until(svc, disable, false, 1, wait) && until(svc, keep, false, 1, wait);
        result("disable/both-rust-providers-called", both, "did not reach both " + disable + " and " + keep);
        if (!both) {
            return 1;
        }
        failures = 0;
        DynamicConfiguration dc = RuleWriter.connect(zk);
        try {
            result("disable/rule-written-by-java", RuleWriter.publish(dc, KEY, rule(disable)), "publishConfig returned false");
            result("disable/java-consumer-stops-calling-the-rust-provider",
                    until(svc, disable, true, 50, wait),
                    "still calling " + disable + " (or no 50 calls in a row elsewhere)");
            result("disable/rule-deleted-by-java", RuleWriter.remove(dc, KEY), "removeConfig returned false");
            result("disable/withdrawn-java-consumer-calls-it-again",
                    until(svc, disable, false, 1, wait),
                    "never called " + disable + " again");
        } finally {
            try {
                dc.close();
            } catch (Exception ignored) {
                // the run's result does not depend on it
            }
        }
        result("disable/no-failed-call", failures == 0, failures + " failed, last: " + lastFailure);
        return failed == 0 ? 0 : 1;
    }

    public static void main(String[] argv) {
        System.setProperty("java.net.preferIPv4Stack", "true");
        Args args = Args.parse(argv);
        RuleConsumer c = new RuleConsumer();
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(args.getInt("deadline", 180000));
            } catch (InterruptedException e) {
                return;
            }
            c.result("deadline", false, "whole run exceeded the deadline");
            Runtime.getRuntime().halt(1);
        }, "rule-consumer-watchdog");
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
        }, "rule-consumer-stop");
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
