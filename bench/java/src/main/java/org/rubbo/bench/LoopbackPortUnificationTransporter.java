package org.rubbo.bench;

import org.apache.dubbo.common.URL;
import org.apache.dubbo.remoting.ChannelHandler;
import org.apache.dubbo.remoting.RemotingException;
import org.apache.dubbo.remoting.api.pu.AbstractPortUnificationServer;
import org.apache.dubbo.remoting.transport.netty4.NettyPortUnificationTransporter;

/** Replaces Dubbo's {@code netty4} PortUnificationTransporter (META-INF/dubbo) to bind loopback only. */
public class LoopbackPortUnificationTransporter extends NettyPortUnificationTransporter {
    @Override
    public AbstractPortUnificationServer bind(URL url, ChannelHandler handler) throws RemotingException {
        return super.bind(LoopbackBind.fix(url), handler);
    }
}
