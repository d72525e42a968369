package org.rubbo.interop;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.yaml.snakeyaml.Yaml;

/**
 * The {@code dubbo:} tree of an application.yml as Java's flat property names
 * ({@code dubbo.provider.timeout}), set as system properties so that Dubbo's
 * {@code Environment} applies them to every config (as Spring Boot's binding would):
 * the same file then drives this provider and a Rust one.
 */
final class YamlConfig {
    private YamlConfig() {}

    /** Reads {@code file} and sets each {@code dubbo.*} property; returns them. */
    static Map<String, String> apply(String file) throws IOException {
        Map<String, String> flat = new TreeMap<>();
        try (InputStream in = Files.newInputStream(Path.of(file))) {
            Object doc = new Yaml().load(in);
            flatten("", doc, flat);
        }
        flat.keySet().removeIf(k -> !k.startsWith("dubbo."));
        flat.forEach(System::setProperty);
        return flat;
    }

    private static void flatten(String prefix, Object node, Map<String, String> out) {
        if (node instanceof Map<?, ?> map) {
            for (Map.Entry<?, ?> e : map.entrySet()) {
                String key = prefix.isEmpty() ? String.valueOf(e.getKey()) : prefix + "." + e.getKey();
                flatten(key, e.getValue(), out);
            }
        } else if (node instanceof List<?> list) {
            out.put(prefix, list.stream().map(String::valueOf).collect(Collectors.joining(",")));
        } else if (node != null) {
            out.put(prefix, String.valueOf(node));
        }
    }
}
