package org.rubbo.interop;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.dubbo.config.ApplicationConfig;
import org.apache.dubbo.config.ReferenceConfig;
import org.apache.dubbo.config.RegistryConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;

/**
 * One traced call, for the cross-language trace (interop cell 15): {@code echo("trace-15")} on
 * InteropService at {@code --url}, with Dubbo's own tracing (dubbo-tracing, Micrometer's
 * OpenTelemetry bridge, the OTLP exporter) turned on by Java's keys as system properties:
 *
 * <pre>
 *   JAVA_OPTS="-Ddubbo.tracing.enabled=true -Ddubbo.tracing.sampling.probability=1.0 \
 *       -Ddubbo.tracing.tracing-exporter.otlp-config.endpoint=http://127.0.0.1:4317" \
 *   run-java.sh TraceConsumer --url dubbo://127.0.0.1:20880 [--timeout 3000] [--linger 60000]
 * </pre>
 *
 * (The classpath needs target/classpath-tracing.txt too.)
 * The nested keys go through {@link TracingFromProperties}. Prints {@code PASS call} or
 * {@code FAIL call: detail}, then stays up (at most {@code --linger} ms, or until killed) so that
 * its batch span processor exports the client span: Dubbo does not flush it at shutdown. The test
 * stops it once its collector has the trace.
 */
public final class TraceConsumer {
    public static final String APPLICATION = "interop-trace-consumer";

    private TraceConsumer() {}

    public static void main(String[] argv) throws Exception {
        System.setProperty("java.net.preferIPv4Stack", "true");
        Args args = Args.parse(argv);
        String url = args.get("url", "dubbo://127.0.0.1:20880");
        int timeout = args.getInt("timeout", 3000);
        LoopbackBind.pinLocalHost(args.get("host", "127.0.0.1"));

        ApplicationConfig app = new ApplicationConfig(APPLICATION);
        app.setQosEnable(false);
        app.setLogger("slf4j");

        ReferenceConfig<InteropService> ref = new ReferenceConfig<>();
        ref.setInterface(InteropService.class);
        ref.setVersion("1.0.0");
        ref.setTimeout(timeout);
        ref.setRetries(0);
        ref.setCheck(false);
        ref.setUrl(url);

        DubboBootstrap bootstrap = DubboBootstrap.getInstance()
                .application(app)
                .registry(new RegistryConfig(RegistryConfig.NO_AVAILABLE))
                .reference(ref);
        TracingFromProperties.apply(bootstrap);
        bootstrap.start();

        InteropService svc = ref.get();
        try {
            String got = svc.echo("trace-15");
            if ("trace-15".equals(got)) {
                System.out.println("PASS call");
            } else {
                System.out.println("FAIL call: echo answered " + got);
            }
        } catch (Throwable t) {
            System.out.println("FAIL call: " + t);
        }
        System.out.flush();

        CountDownLatch exit = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(exit::countDown, "trace-consumer-exit"));
        exit.await(args.getInt("linger", 60000), TimeUnit.MILLISECONDS);
    }
}
