package org.rubbo.bench;

import org.apache.dubbo.common.URL;
import org.apache.dubbo.remoting.ChannelHandler;
import org.apache.dubbo.remoting.RemotingException;
import org.apache.dubbo.remoting.RemotingServer;
import org.apache.dubbo.remoting.transport.netty4.NettyTransporter;

/** Replaces Dubbo's {@code netty4} Transporter (META-INF/dubbo) to bind loopback only. */
public class LoopbackTransporter extends NettyTransporter {
    @Override
    public RemotingServer bind(URL url, ChannelHandler handler) throws RemotingException {
        return super.bind(LoopbackBind.fix(url), handler);
    }
}
