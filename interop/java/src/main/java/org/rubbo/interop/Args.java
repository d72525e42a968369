package org.rubbo.interop;

import java.util.HashMap;
import java.util.Map;

/** Minimal {@code --key value} / {@code --flag} parser shared by the mains. */
final class Args {
    private final Map<String, String> values = new HashMap<>();

    private Args() {}

    static Args parse(String[] argv) {
        Args a = new Args();
        for (int i = 0; i < argv.length; i++) {
            String k = argv[i];
            if (!k.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument: " + k);
            }
            String key = k.substring(2);
            int eq = key.indexOf('=');
            if (eq >= 0) {
                a.values.put(key.substring(0, eq), key.substring(eq + 1));
            } else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) {
                a.values.put(key, argv[++i]);
            } else {
                a.values.put(key, "true");
            }
        }
        return a;
    }

    String get(String key, String def) {
        return values.getOrDefault(key, def);
    }

    int getInt(String key, int def) {
        String v = values.get(key);
        return v == null ? def : Integer.parseInt(v);
    }

    boolean has(String key) {
        return values.containsKey(key);
    }

    /** Registry address, or null for "direct" (absent, empty or N/A). */
    String registry() {
        String r = values.get("registry");
        if (r == null || r.isEmpty() || "N/A".equalsIgnoreCase(r) || "none".equalsIgnoreCase(r)) {
            return null;
        }
        return r;
    }
}
