package org.rubbo.interop;

import java.util.List;
import java.util.Map;

/**
 * The interop contract service (shared/interop/CONTRACT.md section 1). Names and parameter
 * types are on the wire: do not change them.
 */
public interface InteropService {
    String echo(String s);

    int echoInt(int v);

    long echoLong(long v);

    double echoDouble(double v);

    boolean echoBool(boolean v);

    byte[] echoBytes(byte[] b);

    List<String> echoList(List<String> l);

    Map<String, Integer> echoMap(Map<String, Integer> m);

    User echoUser(User u);

    List<User> listUsers(int n);

    void ping();

    String fail(String message) throws InteropException;

    String attachment(String key);

    String slow(int millis);

    String whoami();
}
