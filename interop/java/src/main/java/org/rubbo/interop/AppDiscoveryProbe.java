package org.rubbo.interop;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.alibaba.fastjson2.JSON;
import com.alibaba.fastjson2.JSONArray;
import com.alibaba.fastjson2.JSONObject;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.apache.dubbo.common.utils.JsonUtils;
import org.apache.dubbo.config.ApplicationConfig;
import org.apache.dubbo.config.ReferenceConfig;
import org.apache.dubbo.config.RegistryConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;
import org.apache.dubbo.metadata.MetadataInfo;
import org.apache.dubbo.metadata.MetadataService;

/**
 * Application-level discovery as Java Dubbo 3.3 sees it, for the Rust side's tests (interop cell 10).
 *
 * <pre>
 *   AppDiscoveryProbe revision --in vectors-input.json         # prints the vectors with Java's revision + JSON
 *   AppDiscoveryProbe fetch --url dubbo://127.0.0.1:20880 --app interop-provider [--revision R]
 *   AppDiscoveryProbe nodes --zk 127.0.0.1:2181 --app interop-provider --interface org.rubbo.interop.InteropService
 * </pre>
 *
 * {@code revision}: each input {@code {"app":..,"services":[{name,group,version,protocol,port,path,params}]}}
 * is built with Dubbo's own {@code MetadataInfo}/{@code ServiceInfo} constructors; prints one JSON array of
 * {@code {"input":..,"revision":..,"json":..}} ({@code json} = {@code JsonUtils.toJson(metadataInfo)}, what
 * a provider writes to {@code /dubbo/metadata/{app}/{revision}}).
 *
 * {@code fetch}: calls the provider's MetadataService V1 (group = app, version 1.0.0) as a Java consumer does,
 * prints {@code {"serviceName":..,"version":..,"metadata":<getMetadataInfo(revision) as JSON>,"revision":..}}.
 *
 * {@code nodes}: prints {@code {"instances":{"host:port":<node data>},"mapping":<data>,"providers":[..]}} read
 * with Curator ({@code providers}: the interface-level provider nodes, null when there is no such path).
 */
public final class AppDiscoveryProbe {
    private AppDiscoveryProbe() {}

    public static void main(String[] argv) throws Exception {
        System.setProperty("java.net.preferIPv4Stack", "true");
        if (argv.length == 0) {
            throw new IllegalArgumentException("usage: AppDiscoveryProbe revision|fetch|nodes ...");
        }
        String mode = argv[0];
        String[] rest = new String[argv.length - 1];
        System.arraycopy(argv, 1, rest, 0, rest.length);
        Args args = Args.parse(rest);
        switch (mode) {
            case "revision":
                revision(args);
                break;
            case "fetch":
                fetch(args);
                break;
            case "nodes":
                nodes(args);
                break;
            default:
                throw new IllegalArgumentException("unknown mode " + mode);
        }
        System.out.flush();
        System.exit(0);
    }

    private static void revision(Args args) throws Exception {
        String in = new String(Files.readAllBytes(Paths.get(args.get("in", "-"))), StandardCharsets.UTF_8);
        JSONArray vectors = JSON.parseArray(in);
        JSONArray out = new JSONArray();
        for (int i = 0; i < vectors.size(); i++) {
            JSONObject input = vectors.getJSONObject(i);
            Map<String, MetadataInfo.ServiceInfo> byKey = new HashMap<>();
            JSONArray services = input.getJSONArray("services");
            for (int j = 0; services != null && j < services.size(); j++) {
                JSONObject s = services.getJSONObject(j);
                Map<String, String> params = new HashMap<>();
                JSONObject p = s.getJSONObject("params");
                if (p != null) {
                    for (String k : p.keySet()) {
                        params.put(k, p.getString(k));
                    }
                }
                MetadataInfo.ServiceInfo si = new MetadataInfo.ServiceInfo(
                        s.getString("name"),
                        s.getString("group"),
                        s.getString("version"),
                        s.getString("protocol"),
                        s.getIntValue("port"),
                        s.getString("path"),
                        params);
                byKey.put(si.getMatchKey(), si);
            }
            MetadataInfo info = new MetadataInfo(input.getString("app"), null, byKey);
            JSONObject v = new JSONObject();
            v.put("input", input);
            v.put("revision", info.calAndGetRevision());
            v.put("json", JsonUtils.toJson(info));
            out.add(v);
        }
        System.out.println(JSON.toJSONString(out));
    }

    private static void fetch(Args args) throws Exception {
        String app = args.get("app", InteropProvider.APPLICATION);
        LoopbackBind.pinLocalHost(args.get("host", "127.0.0.1"));
        ApplicationConfig config = new ApplicationConfig("app-discovery-probe");
        config.setQosEnable(false);
        config.setLogger("slf4j");
        ReferenceConfig<MetadataService> ref = new ReferenceConfig<>();
        ref.setInterface(MetadataService.class);
        ref.setGroup(app);
        ref.setVersion(MetadataService.VERSION);
        ref.setUrl(args.get("url", "dubbo://127.0.0.1:20880"));
        ref.setTimeout(args.getInt("timeout", 5000));
        ref.setRetries(0);
        ref.setCheck(false);
        DubboBootstrap bootstrap = DubboBootstrap.getInstance()
                .application(config)
                .registry(new RegistryConfig(RegistryConfig.NO_AVAILABLE))
                .reference(ref);
        bootstrap.start();
        MetadataService svc = ref.get();
        JSONObject out = new JSONObject();
        out.put("serviceName", svc.serviceName());
        out.put("version", svc.version());
        String revision = args.get("revision", null);
        MetadataInfo info = svc.getMetadataInfo(revision);
        out.put("metadata", info == null ? null : JSON.parseObject(JsonUtils.toJson(info)));
        out.put("revision", info == null ? null : info.getRevision());
        System.out.println(out.toJSONString());
        bootstrap.stop();
    }

    private static void nodes(Args args) throws Exception {
        String app = args.get("app", InteropProvider.APPLICATION);
        String iface = args.get("interface", "org.rubbo.interop.InteropService");
        try (CuratorFramework zk = CuratorFrameworkFactory.newClient(
                args.get("zk", "127.0.0.1:2181"), 10000, 5000, new RetryNTimes(3, 500))) {
            zk.start();
            zk.blockUntilConnected();
            JSONObject out = new JSONObject();
            Map<String, Object> instances = new TreeMap<>();
            String base = "/services/" + app;
            if (zk.checkExists().forPath(base) != null) {
                List<String> children = zk.getChildren().forPath(base);
                for (String c : children) {
                    byte[] data = zk.getData().forPath(base + "/" + c);
                    instances.put(c, JSON.parseObject(new String(data, StandardCharsets.UTF_8)));
                }
            }
            out.put("instances", instances);
            String mapping = "/dubbo/mapping/" + iface;
            out.put(
                    "mapping",
                    zk.checkExists().forPath(mapping) == null
                            ? null
                            : new String(zk.getData().forPath(mapping), StandardCharsets.UTF_8));
            String providers = "/dubbo/" + iface + "/providers";
            out.put(
                    "providers",
                    zk.checkExists().forPath(providers) == null
                            ? null
                            : zk.getChildren().forPath(providers));
            System.out.println(out.toJSONString());
        }
    }
}
