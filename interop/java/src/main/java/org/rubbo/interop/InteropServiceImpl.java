package org.rubbo.interop;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.dubbo.rpc.RpcContext;

/** Provider implementation following the contract's behaviour table. */
public class InteropServiceImpl implements InteropService {
    private final String id;

    public InteropServiceImpl(String application, String host, int port) {
        this.id = application + "@" + host + ":" + port;
    }

    @Override
    public String echo(String s) { return s; }

    @Override
    public int echoInt(int v) { return v; }

    @Override
    public long echoLong(long v) { return v; }

    @Override
    public double echoDouble(double v) { return v; }

    @Override
    public boolean echoBool(boolean v) { return v; }

    @Override
    public byte[] echoBytes(byte[] b) { return b; }

    @Override
    public List<String> echoList(List<String> l) { return l; }

    @Override
    public Map<String, Integer> echoMap(Map<String, Integer> m) { return m; }

    @Override
    public User echoUser(User u) { return u; }

    @Override
    public List<User> listUsers(int n) {
        List<User> users = new ArrayList<>(Math.max(n, 0));
        for (int i = 0; i < n; i++) {
            users.add(User.contractUser(i));
        }
        return users;
    }

    @Override
    public void ping() {}

    @Override
    public String fail(String message) throws InteropException {
        throw new InteropException(message);
    }

    @Override
    public String attachment(String key) {
        Object v = RpcContext.getServerAttachment().getObjectAttachment(key);
        return v == null ? null : v.toString();
    }

    @Override
    public String slow(int millis) {
        try {
            Thread.sleep(Math.max(millis, 0));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return "done";
    }

    @Override
    public String whoami() { return id; }
}
