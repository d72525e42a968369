package org.rubbo.interop;

import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;

import org.apache.dubbo.config.TracingConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;
import org.apache.dubbo.config.nested.ExporterConfig;
import org.apache.dubbo.config.nested.SamplingConfig;

/**
 * Java's {@code dubbo.tracing.*} keys, given as system properties (for example
 * {@code JAVA_OPTS=-Ddubbo.tracing.enabled=true
 * -Ddubbo.tracing.tracing-exporter.otlp-config.endpoint=http://127.0.0.1:4317}), as the
 * application's {@link TracingConfig}. Dubbo 3.3.6 loads {@code dubbo.tracing.enabled} from
 * properties by itself but not the nested sampling and exporter settings (its log shows
 * {@code <dubbo:tracing enabled="true" />} and no exporter is made), so a main calls
 * {@link #apply} before {@code start()}. Needs target/classpath-tracing.txt on the class path.
 */
final class TracingFromProperties {
    private static final String PREFIX = "dubbo.tracing.";

    private TracingFromProperties() {}

    /** Sets a TracingConfig on {@code bootstrap} when {@code dubbo.tracing.enabled=true}; returns the keys. */
    static Map<String, String> apply(DubboBootstrap bootstrap) {
        Map<String, String> set = new TreeMap<>();
        for (String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith(PREFIX)) {
                set.put(name.substring(PREFIX.length()), System.getProperty(name));
            }
        }
        if (!"true".equals(set.get("enabled"))) {
            return set;
        }
        TracingConfig tracing = new TracingConfig();
        tracing.setEnabled(true);
        if (set.containsKey("sampling.probability")) {
            tracing.setSampling(new SamplingConfig(Float.parseFloat(set.get("sampling.probability"))));
        }
        String endpoint = set.get("tracing-exporter.otlp-config.endpoint");
        if (endpoint != null) {
            ExporterConfig.OtlpConfig otlp = new ExporterConfig.OtlpConfig(endpoint);
            String timeout = set.get("tracing-exporter.otlp-config.timeout");
            if (timeout != null) {
                otlp.setTimeout(Duration.ofMillis(Long.parseLong(timeout)));
            }
            String compression = set.get("tracing-exporter.otlp-config.compression-method");
            if (compression != null) {
                otlp.setCompressionMethod(compression);
            }
            ExporterConfig exporter = new ExporterConfig();
            exporter.setOtlpConfig(otlp);
            tracing.setTracingExporter(exporter);
        }
        bootstrap.tracing(tracing);
        System.err.println("tracing configuration " + set);
        return set;
    }
}
