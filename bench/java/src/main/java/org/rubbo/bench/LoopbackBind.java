package org.rubbo.bench;

import java.lang.reflect.Field;
import java.net.InetAddress;

import org.apache.dubbo.common.URL;
import org.apache.dubbo.common.utils.NetUtils;

/**
 * Keeps Dubbo servers on loopback. Dubbo's netty servers replace any {@code 127.*} bind address
 * by {@code 0.0.0.0} ({@code NetUtils.isInvalidLocalHost}), which would expose test providers on
 * every interface. The IPv4-mapped IPv6 spelling {@code ::ffff:127.0.0.1} passes that check and
 * Java resolves it to the plain {@code Inet4Address} 127.0.0.1, so the socket binds loopback only.
 * Only the server's own copy of the URL changes; the registered/advertised URL (host 127.0.0.1,
 * anyhost=true as Dubbo computes it) is left alone.
 */
final class LoopbackBind {
    private LoopbackBind() {}

    /**
     * Makes Dubbo treat {@code host} as this machine's address. Dubbo 3.3 refuses 127.* as the
     * address to register (protocol host 127.0.0.1 is silently replaced by the first non-loopback
     * interface address, and DUBBO_IP_TO_REGISTRY=127.* is rejected), which would make providers
     * advertise a non-loopback address. Pinning NetUtils' cached local address keeps every URL
     * (registered provider/consumer URLs, instance address, whoami) on loopback.
     */
    static void pinLocalHost(String host) {
        try {
            InetAddress addr = InetAddress.getByName(host);
            Field local = NetUtils.class.getDeclaredField("LOCAL_ADDRESS");
            local.setAccessible(true);
            local.set(null, addr);
            Field hostAddress = NetUtils.class.getDeclaredField("HOST_ADDRESS");
            hostAddress.setAccessible(true);
            hostAddress.set(null, addr.getHostAddress());
        } catch (ReflectiveOperationException | java.io.IOException e) {
            throw new IllegalStateException("cannot pin Dubbo's local host to " + host, e);
        }
        if (!host.equals(NetUtils.getLocalHost())) {
            throw new IllegalStateException("Dubbo local host is " + NetUtils.getLocalHost() + ", wanted " + host);
        }
    }

    static URL fix(URL url) {
        // ServiceConfig also marks a 127.* host as anyhost=true; the server would then bind 0.0.0.0.
        String ip = url.getParameter("bind.ip", url.getHost());
        if (ip != null && ip.startsWith("127.")) {
            return url.addParameter("bind.ip", "::ffff:" + ip).addParameter("anyhost", false);
        }
        return url;
    }
}
