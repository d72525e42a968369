package org.rubbo.interop;

import java.util.Map;
import java.util.TreeMap;

import org.apache.dubbo.config.SslConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;

/**
 * Java's {@code dubbo.ssl.*} keys, given as system properties (for example
 * {@code JAVA_OPTS=-Ddubbo.ssl.server-key-cert-chain-path=server.pem}), as the
 * application's {@link SslConfig}. Dubbo loads no SslConfig from properties by itself
 * ({@code ConfigManager.loadConfigs} skips it), so a main calls {@link #apply} before
 * {@code start()}.
 */
final class SslFromProperties {
    private SslFromProperties() {}

    /** Sets an SslConfig on {@code bootstrap} when any {@code dubbo.ssl.*} property is set; returns them. */
    static Map<String, String> apply(DubboBootstrap bootstrap) {
        Map<String, String> set = new TreeMap<>();
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("dubbo.ssl.")) {
                set.put(name.substring("dubbo.ssl.".length()), System.getProperty(name));
            }
        }
        if (set.isEmpty()) {
            return set;
        }
        SslConfig ssl = new SslConfig();
        ssl.setServerKeyCertChainPath(set.get("server-key-cert-chain-path"));
        ssl.setServerPrivateKeyPath(set.get("server-private-key-path"));
        ssl.setServerKeyPassword(set.get("server-key-password"));
        ssl.setServerTrustCertCollectionPath(set.get("server-trust-cert-collection-path"));
        ssl.setClientKeyCertChainPath(set.get("client-key-cert-chain-path"));
        ssl.setClientPrivateKeyPath(set.get("client-private-key-path"));
        ssl.setClientKeyPassword(set.get("client-key-password"));
        ssl.setClientTrustCertCollectionPath(set.get("client-trust-cert-collection-path"));
        bootstrap.ssl(ssl);
        System.err.println("ssl configuration " + set);
        return set;
    }
}
