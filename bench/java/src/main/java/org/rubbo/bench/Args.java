package org.rubbo.bench;

import java.util.HashMap;
import java.util.Map;

/** {@code --key value} pairs. */
final class Args {
    private final Map<String, String> values = new HashMap<>();

    static Args parse(String[] argv) {
        Args a = new Args();
        for (int i = 0; i < argv.length; i++) {
            String k = argv[i];
            if (!k.startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("expected --key value at " + k);
            }
            a.values.put(k.substring(2), argv[++i]);
        }
        return a;
    }

    String get(String key, String dflt) {
        return values.getOrDefault(key, dflt);
    }

    int getInt(String key, int dflt) {
        String v = values.get(key);
        return v == null ? dflt : Integer.parseInt(v);
    }

    String require(String key) {
        String v = values.get(key);
        if (v == null) {
            throw new IllegalArgumentException("--" + key + " is required");
        }
        return v;
    }
}
