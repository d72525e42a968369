package org.rubbo.bench;

import java.util.concurrent.CountDownLatch;

import org.apache.dubbo.config.ApplicationConfig;
import org.apache.dubbo.config.ProtocolConfig;
import org.apache.dubbo.config.RegistryConfig;
import org.apache.dubbo.config.ServiceConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;

/**
 * Java Dubbo 3.3.6 provider of {@code org.rubbo.bench.EchoService:1.0.0}, no registry, bound to
 * loopback only (see {@link LoopbackBind}).
 *
 * <pre>
 *   BenchProvider --protocol dubbo|tri --port P [--host 127.0.0.1] [--threads 300]
 * </pre>
 *
 * {@code --threads}: the dubbo protocol's server thread pool (Dubbo's default: fixed, 200 threads,
 * no queue). The bench's 256 calls in flight arrive at once when a cell starts, and 200 threads
 * answer the other 56 with "thread pool is exhausted"; 300 is above the highest in-flight count.
 *
 * Prints one stdout line {@code READY <protocol> <port>} once serving; runs until SIGTERM.
 */
public final class BenchProvider {
    private BenchProvider() {}

    public static void main(String[] argv) throws Exception {
        System.setProperty("java.net.preferIPv4Stack", "true");
        Args args = Args.parse(argv);
        String protocolName = args.get("protocol", "dubbo");
        int port = Integer.parseInt(args.require("port"));
        int threads = args.getInt("threads", 300);
        String host = args.get("host", "127.0.0.1");
        LoopbackBind.pinLocalHost(host);

        ApplicationConfig app = new ApplicationConfig("bench-java-provider");
        app.setQosEnable(false);
        app.setLogger("slf4j");
        ProtocolConfig protocol = new ProtocolConfig(protocolName, port);
        protocol.setHost(host);
        protocol.setThreads(threads);
        ServiceConfig<EchoService> service = new ServiceConfig<>();
        service.setInterface(EchoService.class);
        service.setRef(new EchoServiceImpl());
        service.setVersion("1.0.0");

        DubboBootstrap bootstrap = DubboBootstrap.getInstance()
                .application(app)
                .registry(new RegistryConfig(RegistryConfig.NO_AVAILABLE))
                .protocol(protocol)
                .service(service);
        bootstrap.start();
        System.out.println("READY " + protocolName + " " + port);
        System.out.flush();

        CountDownLatch forever = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(forever::countDown, "bench-provider-exit"));
        forever.await();
    }
}
