package org.rubbo.interop;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

import org.apache.dubbo.common.URL;
import org.apache.dubbo.common.config.configcenter.DynamicConfiguration;
import org.apache.dubbo.common.config.configcenter.DynamicConfigurationFactory;
import org.apache.dubbo.rpc.model.ApplicationModel;
import org.apache.dubbo.rpc.model.FrameworkModel;

/**
 * Writes or deletes one governance rule through Java Dubbo's own
 * {@code ZookeeperDynamicConfiguration} (obtained from Dubbo's
 * {@code DynamicConfigurationFactory} extension), so the path and bytes are exactly
 * what a Java application (or Dubbo Admin) writes:
 *
 * <pre>
 *   run-java.sh RuleWriter --zk 127.0.0.1:2181 --key org.demo.Api:1.0.0:.configurators --file rule.yaml
 *   run-java.sh RuleWriter --zk 127.0.0.1:2181 --key org.demo.Api:1.0.0:.configurators --delete
 * </pre>
 *
 * {@code --group} defaults to {@code dubbo} (Java's {@code DynamicConfiguration.DEFAULT_GROUP}).
 * Prints {@code WROTE key} or {@code DELETED key}; exits 1 when Dubbo reports failure.
 */
public final class RuleWriter {
    private RuleWriter() {}

    /**
     * The config center at {@code zk} (host:port), as Dubbo's factory makes it, in an
     * application model of its own (its own ZooKeeper client, so closing it never touches
     * the caller's application).
     */
    static DynamicConfiguration connect(String zk) {
        ApplicationModel app = FrameworkModel.defaultModel().newApplication();
        URL url = URL.valueOf("zookeeper://" + zk).setScopeModel(app);
        return app.getExtensionLoader(DynamicConfigurationFactory.class)
                .getExtension(url.getProtocol())
                .getDynamicConfiguration(url);
    }

    /** Publishes {@code content} under {@code key} in group {@code dubbo}. */
    static boolean publish(DynamicConfiguration dc, String key, String content) {
        return dc.publishConfig(key, DynamicConfiguration.DEFAULT_GROUP, content);
    }

    /** Removes {@code key} from group {@code dubbo}. */
    static boolean remove(DynamicConfiguration dc, String key) {
        return dc.removeConfig(key, DynamicConfiguration.DEFAULT_GROUP);
    }

    public static void main(String[] argv) throws Exception {
        Args args = Args.parse(argv);
        String zk = args.get("zk", null);
        String key = args.get("key", null);
        if (zk == null || key == null || (args.has("file") == args.has("delete"))) {
            System.err.println("usage: RuleWriter --zk host:port --key KEY [--group G] (--file F | --delete)");
            Runtime.getRuntime().halt(2);
        }
        String group = args.get("group", DynamicConfiguration.DEFAULT_GROUP);
        int code = 0;
        DynamicConfiguration dc = connect(zk);
        try {
            if (args.has("delete")) {
                boolean ok = dc.removeConfig(key, group);
                System.out.println((ok ? "DELETED " : "NOT-DELETED ") + key);
                code = ok ? 0 : 1;
            } else {
                String content = new String(Files.readAllBytes(Paths.get(args.get("file", ""))), StandardCharsets.UTF_8);
                boolean ok = dc.publishConfig(key, group, content);
                System.out.println((ok ? "WROTE " : "NOT-WRITTEN ") + key);
                code = ok ? 0 : 1;
            }
        } catch (Throwable t) {
            t.printStackTrace();
            code = 1;
        }
        System.out.flush();
        try {
            dc.close();
        } catch (Throwable ignored) {
            // exiting anyway
        }
        Runtime.getRuntime().halt(code);
    }
}
