package org.rubbo.hessiangen;

import java.io.*;
import java.lang.reflect.Array;
import java.nio.file.*;
import java.util.*;

import com.alibaba.com.caucho.hessian.io.Hessian2Input;
import com.alibaba.com.caucho.hessian.io.SerializerFactory;

/**
 * Reads every NAME.bin that Rubbo wrote in a directory with hessian-lite and
 * compares it with the Java value of the same name in {@link Vectors}.
 * Prints one line per check and "N passed, N failed"; exits 1 on any failure.
 */
public final class Check {
    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        Map<String, Object[]> expected = Vectors.all();
        SerializerFactory f = new SerializerFactory();
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "*.bin")) {
            for (Path p : ds) files.add(p);
        }
        Collections.sort(files);
        int passed = 0, failed = 0;
        for (Path p : files) {
            String name = p.getFileName().toString().replaceAll("\\.bin$", "");
            Object[] want = expected.get(name);
            String problem;
            try {
                if (want == null) {
                    problem = "no Java vector of that name";
                } else {
                    Hessian2Input in = new Hessian2Input(new ByteArrayInputStream(Files.readAllBytes(p)));
                    in.setSerializerFactory(f);
                    Object[] got = new Object[want.length];
                    for (int i = 0; i < want.length; i++) got[i] = in.readObject();
                    problem = null;
                    if (in.read() != -1) problem = "trailing bytes";
                    for (int i = 0; problem == null && i < want.length; i++) {
                        problem = diff(name, want[i], got[i]);
                    }
                }
            } catch (Throwable t) {
                problem = "exception " + t;
            }
            if (problem == null) {
                passed++;
                System.out.println("ok   " + name);
            } else {
                failed++;
                System.out.println("FAIL " + name + ": " + problem);
            }
        }
        if (passed < 100) {
            failed++;
            System.out.println("FAIL only " + passed + " vectors checked");
        }
        System.out.println(passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }

    static String show(Object o) {
        if (o == null) return "null";
        String s = o.getClass().isArray() ? "array" : String.valueOf(o);
        if (s.length() > 80) s = s.substring(0, 80) + "...";
        return o.getClass().getName() + ":" + s;
    }

    /** null when equal, else what differs. */
    static String diff(String name, Object want, Object got) {
        if (name.equals("cyclic_list")) {
            if (got instanceof List && ((List<?>) got).size() == 2 && "head".equals(((List<?>) got).get(0))
                && ((List<?>) got).get(1) == got) return null;
            return "not a self-containing list: " + show(got);
        }
        if (want == null) return got == null ? null : "want null, got " + show(got);
        if (got == null) return "want " + show(want) + ", got null";
        if (want instanceof Float) {
            double d = Double.parseDouble(want.toString());
            return got instanceof Double && (Double) got == d ? null : "want " + d + ", got " + show(got);
        }
        if (want instanceof Byte || want instanceof Short) {
            return got instanceof Integer && ((Number) got).intValue() == ((Number) want).intValue()
                ? null : "want " + want + ", got " + show(got);
        }
        if (want instanceof Character) {
            return want.toString().equals(got) ? null : "want " + want + ", got " + show(got);
        }
        if (want instanceof Throwable) {
            if (!(got instanceof Throwable)) return "not a Throwable: " + show(got);
            Throwable w = (Throwable) want, g = (Throwable) got;
            if (w.getClass() != g.getClass()) return "class " + g.getClass() + " != " + w.getClass();
            if (!Objects.equals(w.getMessage(), g.getMessage())) return "message " + g.getMessage();
            Throwable wc = w.getCause(), gc = g.getCause();
            if ((wc == null) != (gc == null)) return "cause " + gc;
            if (wc != null && (wc.getClass() != gc.getClass() || !Objects.equals(wc.getMessage(), gc.getMessage())))
                return "cause " + gc;
            if (!Arrays.equals(w.getStackTrace(), g.getStackTrace()))
                return "stack " + Arrays.toString(g.getStackTrace());
            return null;
        }
        if (want.getClass().isArray()) {
            if (!got.getClass().isArray() || got.getClass() != want.getClass())
                return "want " + want.getClass().getName() + ", got " + show(got);
            int n = Array.getLength(want);
            if (Array.getLength(got) != n) return "length " + Array.getLength(got) + " != " + n;
            boolean prim = want.getClass().getComponentType().isPrimitive();
            for (int i = 0; i < n; i++) {
                if (prim) {
                    if (!Array.get(want, i).equals(Array.get(got, i))) return "[" + i + "] differs";
                    continue;
                }
                String d = diff(name, Array.get(want, i), Array.get(got, i));
                if (d != null) return "[" + i + "] " + d;
            }
            return null;
        }
        if (want instanceof Collection || want instanceof Map) {
            if (want.getClass() != got.getClass())
                return "want " + want.getClass().getName() + ", got " + show(got);
        }
        if (want instanceof Double && got instanceof Double) {
            return ((Double) want).doubleValue() == ((Double) got).doubleValue() ? null : "want " + want + ", got " + got;
        }
        if (want.getClass() != got.getClass() && !(want instanceof Map && got instanceof Map))
            return "want " + want.getClass().getName() + ", got " + show(got);
        return want.equals(got) ? null : "want " + show(want) + ", got " + show(got);
    }
}
