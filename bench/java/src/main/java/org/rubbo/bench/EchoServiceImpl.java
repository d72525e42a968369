package org.rubbo.bench;

import org.rubbo.interop.User;

/** Echo: the argument back, nothing else. */
public final class EchoServiceImpl implements EchoService {
    @Override
    public String echo(String s) {
        return s;
    }

    @Override
    public User echoUser(User u) {
        return u;
    }
}
