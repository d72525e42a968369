package org.rubbo.interop;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import com.alibaba.com.caucho.hessian.io.Hessian2Input;
import com.alibaba.com.caucho.hessian.io.Hessian2Output;
import org.apache.dubbo.config.ApplicationConfig;
import org.apache.dubbo.config.ReferenceConfig;
import org.apache.dubbo.config.RegistryConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;
import org.apache.dubbo.rpc.RpcContext;
import org.apache.dubbo.rpc.service.EchoService;
import org.apache.dubbo.rpc.service.GenericService;

/**
 * Captures golden Dubbo frames for the Rust codec tests.
 *
 * <pre>
 *   FrameCapture --provider 127.0.0.1:PORT --out interop/fixtures/dubbo
 * </pre>
 *
 * (a) A recording TCP proxy on 127.0.0.1 sits between a real Java 3.3 consumer (direct URL to the
 * proxy) and a real Java provider; every frame is split on the 16-byte header and saved exactly as
 * sent: the consumer's request as {@code name.request.bin}, the provider's answer as
 * {@code name.response.bin}. (b) A raw socket client sends hand-built requests straight to the
 * provider (unknown service / method / version, a heartbeat) and records the answers. A README.md
 * table describing every file is generated.
 */
public final class FrameCapture {
    private static final String IFACE = "org.rubbo.interop.InteropService";
    private static final int WAIT_MS = 8000;

    /** One dubbo frame as seen on the wire. */
    record Frame(boolean fromConsumer, byte[] bytes) {
        int flag() { return bytes[2] & 0xff; }

        int status() { return bytes[3] & 0xff; }

        long id() { return ByteBuffer.wrap(bytes, 4, 8).getLong(); }

        int bodyLength() { return ByteBuffer.wrap(bytes, 12, 4).getInt(); }

        boolean isRequest() { return (flag() & 0x80) != 0; }

        boolean isEvent() { return (flag() & 0x20) != 0; }
    }

    private final LinkedBlockingQueue<Frame> frames = new LinkedBlockingQueue<>();
    private final Path out;
    private final List<String> readmeRows = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    private final Map<String, Frame> captured = new LinkedHashMap<>();

    private FrameCapture(Path out) {
        this.out = out;
    }

    public static void main(String[] argv) throws Exception {
        System.setProperty("java.net.preferIPv4Stack", "true");
        Args args = Args.parse(argv);
        String provider = args.get("provider", null);
        if (provider == null) {
            throw new IllegalArgumentException("need --provider 127.0.0.1:PORT");
        }
        Path out = Paths.get(args.get("out", "interop/fixtures/dubbo"));
        Files.createDirectories(out);
        String[] hp = provider.split(":");
        InetSocketAddress target = new InetSocketAddress(hp[0], Integer.parseInt(hp[1]));

        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(args.getInt("deadline", 120000));
                System.err.println("FrameCapture: deadline exceeded");
                Runtime.getRuntime().halt(3);
            } catch (InterruptedException ignored) {
                // done
            }
        }, "capture-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();

        int rc = 0;
        FrameCapture fc = new FrameCapture(out);
        try {
            fc.capture(target);
        } catch (Throwable t) {
            t.printStackTrace();
            rc = 1;
        }
        System.out.flush();
        Runtime.getRuntime().halt(rc);
    }

    private void capture(InetSocketAddress target) throws Exception {
        LoopbackBind.pinLocalHost("127.0.0.1");
        ServerSocket proxy = new ServerSocket();
        proxy.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
        startProxy(proxy, target);

        ApplicationConfig app = new ApplicationConfig(InteropConsumer.APPLICATION);
        app.setQosEnable(false);
        app.setLogger("slf4j");
        String url = "dubbo://127.0.0.1:" + proxy.getLocalPort();
        Map<String, String> params = new HashMap<>();
        params.put("heartbeat", "1500"); // consumer sends a heartbeat after 1.5 s without reads

        ReferenceConfig<InteropService> ref = new ReferenceConfig<>();
        ref.setInterface(InteropService.class);
        ref.setVersion("1.0.0");
        ref.setTimeout(5000);
        ref.setRetries(0);
        ref.setUrl(url);
        ref.setParameters(params);

        ReferenceConfig<GenericService> gref = new ReferenceConfig<>();
        gref.setInterface(IFACE);
        gref.setVersion("1.0.0");
        gref.setGeneric("true");
        gref.setTimeout(5000);
        gref.setRetries(0);
        gref.setUrl(url);
        gref.setParameters(params);

        DubboBootstrap.getInstance()
                .application(app)
                .registry(new RegistryConfig(RegistryConfig.NO_AVAILABLE))
                .reference(ref)
                .reference(gref)
                .start();
        InteropService svc = ref.get();
        GenericService g = gref.get();

        // (a) consumer requests (and the provider's real answers) through the recording proxy
        call("echo", "echo(\"hello\")", () -> svc.echo("hello"));
        call("echo_null", "echo(null)", () -> svc.echo(null));
        call("echo_int", "echoInt(48)", () -> svc.echoInt(48));
        call("echo_long", "echoLong(Long.MAX_VALUE)", () -> svc.echoLong(Long.MAX_VALUE));
        call("echo_double", "echoDouble(12.25)", () -> svc.echoDouble(12.25));
        call("echo_bool", "echoBool(true)", () -> svc.echoBool(true));
        call("echo_bytes", "echoBytes({0,1,2,0xff})", () -> svc.echoBytes(new byte[] {0, 1, 2, (byte) 0xff}));
        call("echo_list", "echoList([\"a\",\"b\",\"c\"])", () -> svc.echoList(new ArrayList<>(List.of("a", "b", "c"))));
        call("echo_map", "echoMap({\"a\":1})", () -> {
            Map<String, Integer> m = new HashMap<>();
            m.put("a", 1);
            return svc.echoMap(m);
        });
        call("echo_string_chunked", "echo(\"a\"x32767 + U+1F600 + \"b\"x100): hessian string chunks, surrogate pair at the 32768-unit boundary",
                () -> svc.echo("a".repeat(32767) + "\uD83D\uDE00" + "b".repeat(100)).length());
        call("echo_bytes_chunked", "echoBytes(40000 bytes, b[i] = i*31+7): hessian binary chunks", () -> {
            byte[] b = new byte[40000];
            for (int i = 0; i < b.length; i++) {
                b[i] = (byte) (i * 31 + 7);
            }
            return svc.echoBytes(b);
        });
        call("echo_user", "echoUser(contract user 1)", () -> svc.echoUser(User.contractUser(1)));
        call("list_users", "listUsers(2)", () -> svc.listUsers(2));
        call("ping", "ping() (void: response flag NULL_VALUE_WITH_ATTACHMENTS)", () -> {
            svc.ping();
            return null;
        });
        call("fail", "fail(\"boom\") -> InteropException", () -> {
            try {
                return svc.fail("boom");
            } catch (InteropException e) {
                return e;
            }
        });
        call("attachment", "attachment(\"rubbo-key\") with client attachment rubbo-key=value-1", () -> {
            RpcContext.getClientAttachment().setAttachment("rubbo-key", "value-1");
            return svc.attachment("rubbo-key");
        });
        call("whoami", "whoami()", svc::whoami);
        call("generic_echo", "GenericService.$invoke(\"echo\", [\"java.lang.String\"], [\"hello\"])",
                () -> g.$invoke("echo", new String[] {"java.lang.String"}, new Object[] {"hello"}));
        call("generic_echo_user", "GenericService.$invoke(\"echoUser\", [User], [Map with class])", () -> {
            Map<String, Object> user = new HashMap<>();
            user.put("class", "org.rubbo.interop.User");
            user.put("id", 1L);
            user.put("name", "user-1");
            user.put("gender", "FEMALE");
            return g.$invoke("echoUser", new String[] {"org.rubbo.interop.User"}, new Object[] {user});
        });
        call("echo_service", "EchoService.$echo(\"hello\")", () -> ((EchoService) svc).$echo("hello"));
        captureHeartbeat();

        // (b) raw client straight to the provider
        try (Socket s = new Socket()) {
            s.connect(target, 3000);
            s.setSoTimeout(WAIT_MS);
            raw(s, "replay_echo", "the captured echo.request.bin replayed byte for byte",
                    Files.readAllBytes(out.resolve("echo.request.bin")));
            raw(s, "unknown_service", "echo(\"hello\") on org.rubbo.interop.NoSuchService:1.0.0 (hand-built)",
                    buildRequest(0x1001, "org.rubbo.interop.NoSuchService", "1.0.0", "echo", "Ljava/lang/String;",
                            new Object[] {"hello"}));
            raw(s, "unknown_method", "noSuchMethod(\"hello\") on InteropService:1.0.0 (hand-built)",
                    buildRequest(0x1002, IFACE, "1.0.0", "noSuchMethod", "Ljava/lang/String;", new Object[] {"hello"}));
            raw(s, "unknown_version", "echo(\"hello\") on InteropService:9.9.9 (hand-built)",
                    buildRequest(0x1003, IFACE, "9.9.9", "echo", "Ljava/lang/String;", new Object[] {"hello"}));
            raw(s, "unexported_version", "echo(\"hello\"): body version 1.0.0 but attachment version 9.9.9 (hand-built)",
                    buildRequest(0x1005, IFACE, "1.0.0", "9.9.9", "echo", "Ljava/lang/String;", new Object[] {"hello"}));
            raw(s, "wrong_descriptor", "echoInt with descriptor Ljava/lang/Integer; (hand-built)",
                    buildRequest(0x1004, IFACE, "1.0.0", "echoInt", "Ljava/lang/Integer;", new Object[] {48}));
            raw(s, "raw_heartbeat", "heartbeat request id 7 (hand-built, reference 2.5)",
                    new byte[] {(byte) 0xda, (byte) 0xbb, (byte) 0xe2, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 1, 0x4e});
        }
        compareReplay();
        writeReadme();
        System.out.println("captured " + readmeRows.size() + " frames into " + out);
    }

    @FunctionalInterface
    interface Call {
        Object run() throws Throwable;
    }

    private void startProxy(ServerSocket proxy, InetSocketAddress target) {
        Thread acceptor = new Thread(() -> {
            while (true) {
                try {
                    Socket c = proxy.accept();
                    Socket p = new Socket();
                    p.connect(target, 3000);
                    pump(c.getInputStream(), p.getOutputStream(), true);
                    pump(p.getInputStream(), c.getOutputStream(), false);
                } catch (IOException e) {
                    return;
                }
            }
        }, "capture-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    private void pump(InputStream in, OutputStream os, boolean fromConsumer) {
        Thread t = new Thread(() -> {
            DataInputStream din = new DataInputStream(in);
            try {
                while (true) {
                    byte[] header = new byte[16];
                    din.readFully(header);
                    if ((header[0] & 0xff) != 0xda || (header[1] & 0xff) != 0xbb) {
                        throw new IOException("not a dubbo frame: " + hex(header, 16));
                    }
                    int len = ByteBuffer.wrap(header, 12, 4).getInt();
                    byte[] frame = new byte[16 + len];
                    System.arraycopy(header, 0, frame, 0, 16);
                    din.readFully(frame, 16, len);
                    frames.add(new Frame(fromConsumer, frame));
                    os.write(frame);
                    os.flush();
                }
            } catch (IOException e) {
                try {
                    os.close();
                } catch (IOException ignored) {
                    // closing
                }
            }
        }, fromConsumer ? "capture-c2p" : "capture-p2c");
        t.setDaemon(true);
        t.start();
    }

    private void call(String name, String what, Call c) throws Exception {
        frames.clear();
        Object result;
        try {
            result = c.run();
        } catch (Throwable t) {
            result = t;
        }
        Frame req = null;
        Frame resp = null;
        long until = System.currentTimeMillis() + WAIT_MS;
        while ((req == null || resp == null) && System.currentTimeMillis() < until) {
            Frame f = frames.poll(200, TimeUnit.MILLISECONDS);
            if (f == null || f.isEvent()) {
                if (f != null) {
                    notes.add("a heartbeat/event frame passed during `" + name + "` and was not saved there");
                }
                continue;
            }
            if (f.fromConsumer() && f.isRequest() && req == null) {
                req = f;
            } else if (!f.fromConsumer() && !f.isRequest() && req != null && f.id() == req.id()) {
                resp = f;
            }
        }
        if (req == null || resp == null) {
            throw new IllegalStateException("no request/response captured for " + name);
        }
        save(name, what, req, resp, "consumer via proxy; result: " + describe(result));
    }

    private void captureHeartbeat() throws Exception {
        frames.clear();
        Frame req = null;
        Frame resp = null;
        long until = System.currentTimeMillis() + WAIT_MS;
        while ((req == null || resp == null) && System.currentTimeMillis() < until) {
            Frame f = frames.poll(200, TimeUnit.MILLISECONDS);
            if (f == null || !f.isEvent()) {
                continue;
            }
            if (f.fromConsumer() && f.isRequest() && req == null) {
                req = f;
            } else if (!f.fromConsumer() && req != null && f.id() == req.id()) {
                resp = f;
            }
        }
        if (req == null || resp == null) {
            notes.add("no heartbeat was captured from the consumer within " + WAIT_MS + " ms");
            return;
        }
        save("heartbeat", "consumer heartbeat (idle 1.5 s, URL param heartbeat=1500)", req, resp,
                "consumer via proxy; the provider's heartbeat reply");
    }

    private void raw(Socket s, String name, String what, byte[] request) throws IOException {
        OutputStream os = s.getOutputStream();
        os.write(request);
        os.flush();
        DataInputStream din = new DataInputStream(s.getInputStream());
        byte[] header = new byte[16];
        try {
            din.readFully(header);
        } catch (EOFException e) {
            throw new IOException("provider closed the connection after " + name, e);
        }
        int len = ByteBuffer.wrap(header, 12, 4).getInt();
        byte[] frame = new byte[16 + len];
        System.arraycopy(header, 0, frame, 0, 16);
        din.readFully(frame, 16, len);
        save(name, what, new Frame(true, request), new Frame(false, frame), "raw socket to provider");
    }

    /** Builds a request frame exactly as DubboCodec lays it out (reference section 2.1). */
    static byte[] buildRequest(long id, String service, String version, String method, String desc, Object[] args)
            throws IOException {
        return buildRequest(id, service, version, version, method, desc, args);
    }

    /** As above, with a separate {@code version} attachment (the provider's exporter lookup uses it). */
    static byte[] buildRequest(long id, String service, String version, String attVersion, String method, String desc,
            Object[] args) throws IOException {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        Hessian2Output h = new Hessian2Output(body);
        h.writeString("2.0.2");
        h.writeString(service);
        h.writeString(version);
        h.writeString(method);
        h.writeString(desc);
        for (Object a : args) {
            h.writeObject(a);
        }
        Map<String, Object> att = new HashMap<>();
        att.put("path", service);
        att.put("interface", service);
        att.put("version", attVersion);
        att.put("timeout", "3000");
        att.put("remote.application", "interop-consumer");
        h.writeObject(att);
        h.flush();
        byte[] b = body.toByteArray();
        ByteBuffer frame = ByteBuffer.allocate(16 + b.length);
        frame.put((byte) 0xda).put((byte) 0xbb).put((byte) 0xc2).put((byte) 0);
        frame.putLong(id).putInt(b.length).put(b);
        return frame.array();
    }

    private void save(String name, String what, Frame req, Frame resp, String how) throws IOException {
        Files.write(out.resolve(name + ".request.bin"), req.bytes());
        Files.write(out.resolve(name + ".response.bin"), resp.bytes());
        captured.put(name + ".request", req);
        captured.put(name + ".response", resp);
        String reqInfo = String.format("flag 0x%02x, id %d, body %d", req.flag(), req.id(), req.bodyLength());
        String respInfo = String.format("flag 0x%02x, status %d, id %d, body %d%s", resp.flag(), resp.status(),
                resp.id(), resp.bodyLength(), resultFlag(resp));
        String attachments = requestAttachments(req);
        readmeRows.add("| `" + name + "` | " + what + " | " + reqInfo + (attachments.isEmpty() ? "" : "; attachments " + attachments)
                + " | " + respInfo + " | " + how + " |");
    }

    /** For OK non-event responses: the hessian result flag (reference section 2.2). */
    private static String resultFlag(Frame resp) {
        if (resp.isEvent() || resp.status() != 20 || resp.bodyLength() == 0) {
            if (resp.status() != 20 && resp.bodyLength() > 0) {
                try {
                    Hessian2Input in = new Hessian2Input(new ByteArrayInputStream(resp.bytes(), 16, resp.bodyLength()));
                    String text = in.readString();
                    return ", error text: \"" + abbreviate(text.replace('|', '/').replace('\n', ' '), 160) + "\"";
                } catch (Exception e) {
                    return "";
                }
            }
            return "";
        }
        int b = resp.bytes()[16] & 0xff;
        String[] names = {"WITH_EXCEPTION", "VALUE", "NULL_VALUE", "WITH_EXCEPTION_WITH_ATTACHMENTS",
            "VALUE_WITH_ATTACHMENTS", "NULL_VALUE_WITH_ATTACHMENTS"};
        int flag = b - 0x90;
        if (flag < 0 || flag >= names.length) {
            return String.format(", first body byte 0x%02x", b);
        }
        String att = "";
        if (flag >= 3) {
            try {
                Hessian2Input in = new Hessian2Input(new ByteArrayInputStream(resp.bytes(), 16, resp.bodyLength()));
                in.readInt();
                if (flag != 5) {
                    in.readObject();
                }
                att = "; attachments `" + new TreeMap<>((Map<?, ?>) in.readObject()) + "`";
            } catch (Exception e) {
                att = "; attachments undecodable: " + e;
            }
        }
        return ", result flag " + flag + " " + names[flag] + att;
    }

    /** Decodes the attachments map at the end of a (non-event) request body. */
    private static String requestAttachments(Frame req) {
        if (req.isEvent()) {
            return "";
        }
        try {
            Hessian2Input in = new Hessian2Input(new ByteArrayInputStream(req.bytes(), 16, req.bodyLength()));
            in.readString();
            in.readString();
            in.readString();
            in.readString();
            String desc = in.readString();
            for (int i = 0; i < countParams(desc); i++) {
                in.readObject();
            }
            Object att = in.readObject();
            if (att instanceof Map) {
                return "`" + new TreeMap<>((Map<?, ?>) att) + "`";
            }
            return "(not a map: " + att + ")";
        } catch (Exception e) {
            return "(undecodable: " + e + ")";
        }
    }

    static int countParams(String desc) {
        int n = 0;
        int i = 0;
        while (i < desc.length()) {
            char c = desc.charAt(i);
            if (c == '[') {
                i++;
                continue;
            }
            if (c == 'L') {
                i = desc.indexOf(';', i) + 1;
            } else {
                i++;
            }
            n++;
        }
        return n;
    }

    private void compareReplay() {
        Frame a = captured.get("echo.response");
        Frame b = captured.get("replay_echo.response");
        if (a != null && b != null) {
            notes.add("`replay_echo.response.bin` is " + (java.util.Arrays.equals(a.bytes(), b.bytes())
                    ? "byte-identical to" : "DIFFERENT from") + " `echo.response.bin` (same request bytes sent twice)");
        }
    }

    /** Facts read back from the captured bytes, so the README states what the frames show. */
    private void observe() {
        Frame f = captured.get("echo_string_chunked.request");
        if (f != null) {
            byte[] b = f.bytes();
            for (int i = 16; i + 2 < b.length; i++) {
                if (b[i] == 'R' && i > 20 && b[i - 1] == ';') {
                    int len = ((b[i + 1] & 0xff) << 8) | (b[i + 2] & 0xff);
                    notes.add("`echo_string_chunked`: the argument starts with a non-final chunk `0x52` of " + len
                            + " UTF-16 units (hessian-lite shortens a 32768-unit chunk that would end on a high surrogate)");
                    break;
                }
            }
        }
        Frame hb = captured.get("heartbeat.request");
        if (hb != null) {
            notes.add("`heartbeat`: the id is the next value of the consumer's ordinary request counter");
        }
    }

    private void writeReadme() throws IOException {
        observe();
        StringBuilder sb = new StringBuilder();
        sb.append("# Golden Dubbo frames from Apache Dubbo ").append(org.apache.dubbo.common.Version.getVersion())
                .append(" (Java ").append(System.getProperty("java.version")).append(")\n\n");
        sb.append("Generated by `interop/java/capture-fixtures.sh` (`org.rubbo.interop.FrameCapture`); do not edit by hand.\n\n");
        sb.append("Each `<name>.request.bin` / `<name>.response.bin` is one complete frame (16-byte header + body)\n");
        sb.append("exactly as it crossed the socket. Rows marked \"consumer via proxy\" are what a real Java consumer\n");
        sb.append("sent (through a recording proxy) and what a real Java provider answered; rows marked \"raw socket\"\n");
        sb.append("are hand-built requests (same layout as `DubboCodec`, reference section 2.1) sent straight to the\n");
        sb.append("provider. Request ids of captured calls come from Java's random per-process counter: tests should\n");
        sb.append("read the id from the header, not hard-code it. Provider: `InteropProvider` (`interop-provider`),\n");
        sb.append("consumer application `interop-consumer`, service `org.rubbo.interop.InteropService:1.0.0`,\n");
        sb.append("serialization hessian2 (id 2). Hessian `HashMap` order is hash order.\n\n");
        sb.append("| name | call | request | response | source |\n|---|---|---|---|---|\n");
        for (String r : readmeRows) {
            sb.append(r).append('\n');
        }
        if (!notes.isEmpty()) {
            sb.append("\nNotes:\n\n");
            for (String n : new java.util.LinkedHashSet<>(notes)) {
                sb.append("- ").append(n).append('\n');
            }
        }
        Files.write(out.resolve("README.md"), sb.toString().getBytes(StandardCharsets.UTF_8));
    }

    private static String describe(Object o) {
        if (o == null) {
            return "null";
        }
        if (o instanceof Throwable) {
            Throwable t = (Throwable) o;
            return t.getClass().getName() + "(" + abbreviate(String.valueOf(t.getMessage()), 80).replace('|', '/') + ")";
        }
        if (o instanceof byte[]) {
            return "byte[" + ((byte[]) o).length + "]";
        }
        return abbreviate(String.valueOf(o).replace('|', '/').replace('\n', ' '), 80);
    }

    private static String abbreviate(String s, int max) {
        return s.length() <= max ? s : s.substring(0, max) + "...";
    }

    private static String hex(byte[] b, int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < Math.min(n, b.length); i++) {
            sb.append(String.format("%02x", b[i]));
        }
        return sb.toString();
    }
}
