package org.rubbo.interop;

import java.util.concurrent.CountDownLatch;

import org.apache.dubbo.config.ApplicationConfig;
import org.apache.dubbo.config.ProtocolConfig;
import org.apache.dubbo.config.RegistryConfig;
import org.apache.dubbo.config.ServiceConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;

/**
 * Java Dubbo provider of the interop contract.
 *
 * <pre>
 *   InteropProvider --port 20880 [--protocol dubbo|tri] [--registry zookeeper://127.0.0.1:2181 | N/A]
 *                   [--host 127.0.0.1]
 *                   [--register-mode all|interface|instance] [--config application.yml]
 * </pre>
 *
 * {@code --config}: the {@code dubbo:} tree of a YAML file, as system properties (see
 * {@link YamlConfig}); they beat the flags, as in Java's {@code Environment}.
 *
 * TLS: Java's {@code dubbo.ssl.*} keys as system properties ({@code JAVA_OPTS=-Ddubbo.ssl...}),
 * see {@link SslFromProperties}.
 *
 * {@code --register-mode} (Dubbo default {@code all}): {@code interface} writes only
 * /dubbo/&lt;iface&gt;/providers, {@code instance} only the application-level /services nodes.
 *
 * With {@code --protocol tri} it also serves {@code org.rubbo.interop.Greeter} (IDL mode, no version).
 *
 * Prints exactly one stdout line {@code READY <protocol> <port>} once serving, then runs until killed
 * (SIGTERM runs Dubbo's shutdown hook: unregister, close server). Logs go to stderr.
 */
public final class InteropProvider {
    public static final String APPLICATION = "interop-provider";

    private InteropProvider() {}

    public static void main(String[] argv) throws Exception {
        // Plain AF_INET sockets (must be set before any networking class initialises).
        System.setProperty("java.net.preferIPv4Stack", "true");
        Args args = Args.parse(argv);
        if (args.has("config")) {
            System.err.println("interop-provider: configuration " + YamlConfig.apply(args.get("config", "")));
        }
        int port = args.getInt("port", 20880);
        String host = args.get("host", "127.0.0.1");
        String registry = args.registry();

        LoopbackBind.pinLocalHost(host);
        ApplicationConfig app = new ApplicationConfig(APPLICATION);
        app.setQosEnable(false);
        app.setLogger("slf4j");
        if (args.has("register-mode")) {
            app.setRegisterMode(args.get("register-mode", "all"));
        }

        String protocolName = args.get("protocol", "dubbo");
        ProtocolConfig protocol = new ProtocolConfig(protocolName, port);
        protocol.setHost(host);
        // Binds only `host`: see LoopbackBind (Dubbo itself would widen 127.* to 0.0.0.0).

        RegistryConfig reg = new RegistryConfig(registry == null ? RegistryConfig.NO_AVAILABLE : registry);
        if (registry != null) {
            reg.setTimeout(args.getInt("registry-timeout", 10000));
        }

        ServiceConfig<InteropService> service = new ServiceConfig<>();
        service.setInterface(InteropService.class);
        service.setRef(new InteropServiceImpl(APPLICATION, host, port));
        service.setVersion("1.0.0");

        DubboBootstrap bootstrap = DubboBootstrap.getInstance()
                .application(app)
                .registry(reg)
                .protocol(protocol)
                .service(service);
        if ("tri".equals(protocolName)) {
            // The IDL-mode Greeter (CONTRACT.md section 2) beside InteropService, on the same port.
            // No version: gRPC clients send no tri-service-version.
            ServiceConfig<Greeter> greeter = new ServiceConfig<>();
            greeter.setInterface(Greeter.class);
            greeter.setRef(new GreeterImpl());
            bootstrap.service(greeter);
            // The interop-only wrapper-mode StreamService (StreamObserver, hessian2 in wrappers).
            ServiceConfig<StreamService> streams = new ServiceConfig<>();
            streams.setInterface(StreamService.class);
            streams.setRef(new StreamServiceImpl());
            bootstrap.service(streams);
        }
        SslFromProperties.apply(bootstrap);
        TracingFromProperties.apply(bootstrap);
        bootstrap.start();

        System.out.println("READY " + protocolName + " " + port);
        System.out.flush();

        CountDownLatch forever = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(forever::countDown, "interop-provider-exit"));
        forever.await();
        // Dubbo's own shutdown hook stops the bootstrap (unregister + close).
        if (bootstrap.isRunning()) {
            System.err.println("interop-provider: shutting down");
        }
    }
}
