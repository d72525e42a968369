package org.rubbo.bench;

/** Echo: the argument back, nothing else. */
public final class EchoServiceImpl implements EchoService {
    @Override
    public String echo(String s) {
        return s;
    }
}
