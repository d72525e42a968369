package org.rubbo.hessiangen;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.*;

import org.rubbo.interop.*;

/** The named test values: each entry is the sequence of top-level values of one stream. */
public final class Vectors {
    private Vectors() {}

    public static String repeat(char c, int n) {
        StringBuilder sb = new StringBuilder(n);
        for (int i = 0; i < n; i++) sb.append(c);
        return sb.toString();
    }

    public static byte[] bytes(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) b[i] = (byte) (i * 7 + 1);
        return b;
    }

    /** The interop user i, exactly as CONTRACT.md's listUsers builds it. */
    public static User user(int i) {
        User u = new User();
        u.setId(i);
        u.setName("user-" + i);
        u.setAge(20 + i % 50);
        u.setGender(i % 2 == 0 ? Gender.MALE : Gender.FEMALE);
        u.setAddress(new Address("city-" + i, "street-" + i, 310000 + i));
        u.setTags(new ArrayList<>(List.of("t" + i)));
        HashMap<String, String> props = new HashMap<>();
        props.put("k", "v" + i);
        u.setProps(props);
        u.setCreatedAt(new Date(1700000000000L + i));
        u.setBalance(new BigDecimal(i + ".50"));
        return u;
    }

    static Object[] one(Object o) { return new Object[] {o}; }

    public static LinkedHashMap<String, Object[]> all() {
        LinkedHashMap<String, Object[]> v = new LinkedHashMap<>();
        v.put("null", one(null));
        v.put("true", one(true));
        v.put("false", one(false));
        int[] ints = {0, 1, -16, 47, 48, -17, 2047, 2048, -2048, -2049, 262143, 262144, -262144, -262145,
            Integer.MAX_VALUE, Integer.MIN_VALUE};
        for (int i : ints) v.put("int_" + i, one(i));
        long[] longs = {0L, -8L, 15L, 16L, -9L, 2047L, 2048L, -2048L, -2049L, 262143L, 262144L, -262144L,
            -262145L, 2147483647L, -2147483648L, 2147483648L, -2147483649L, Long.MAX_VALUE, Long.MIN_VALUE};
        for (long l : longs) v.put("long_" + l, one(l));
        double[] doubles = {0.0, 1.0, -1.0, 127.0, -128.0, 128.0, -129.0, 32767.0, -32768.0, 32768.0,
            12.25, 0.001, -0.5, 1.5, 2147483.647, 3.141592653589793, 1e300, -0.0, 100000.0, 1e-9};
        for (double d : doubles) v.put("double_" + d, one(d));
        v.put("float_0.1", one(0.1f));
        v.put("byte_5", one((byte) 5));
        v.put("short_-300", one((short) -300));
        v.put("char_x", one('x'));
        v.put("string_empty", one(""));
        v.put("string_hello", one("hello"));
        v.put("string_31", one(repeat('a', 31)));
        v.put("string_32", one(repeat('b', 32)));
        v.put("string_1023", one(repeat('c', 1023)));
        v.put("string_1024", one(repeat('d', 1024)));
        v.put("string_32768", one(repeat('e', 32768)));
        v.put("string_32769", one(repeat('f', 32769)));
        v.put("string_70000", one(repeat('g', 70000)));
        v.put("string_cjk", one("中文字符串"));
        v.put("string_emoji", one("\uD83D\uDE00"));
        v.put("string_mixed", one("a\uD83D\uDE00b\u00e9\u4e2d\u0000z"));
        v.put("string_surrogate_boundary", one(repeat('h', 32767) + "\uD83D\uDE00" + repeat('i', 10)));
        v.put("binary_empty", one(new byte[0]));
        v.put("binary_15", one(bytes(15)));
        v.put("binary_16", one(bytes(16)));
        v.put("binary_1023", one(bytes(1023)));
        v.put("binary_1024", one(bytes(1024)));
        v.put("binary_70000", one(bytes(70000)));
        v.put("date_epoch", one(new Date(0)));
        v.put("date_ms", one(new Date(1700000000001L)));
        v.put("date_minute", one(new Date(1699999980000L)));
        v.put("date_negative", one(new Date(-1L)));
        v.put("list_empty", one(new ArrayList<>()));
        v.put("list_int_2", one(new ArrayList<>(List.of(1, 2))));
        v.put("list_8", one(new ArrayList<>(List.of(1, 2, 3, 4, 5, 6, 7, 8))));
        v.put("list_mixed", one(new ArrayList<>(Arrays.asList("a", 1, 2L, 3.5, true, null))));
        v.put("list_nested", one(new ArrayList<>(List.of(new ArrayList<>(List.of(1)), new ArrayList<>()))));
        v.put("array_int", one(new int[] {1, 2}));
        v.put("array_string", one(new String[] {"a", "b"}));
        v.put("array_long_9", one(new long[] {1, 2, 3, 4, 5, 6, 7, 8, 9}));
        v.put("linkedlist", one(new LinkedList<>(List.of("x", "y"))));
        v.put("hashset_1", one(new HashSet<>(List.of("only"))));
        v.put("two_typed_lists", new Object[] {new LinkedList<>(List.of(1)), new LinkedList<>(List.of(2))});
        v.put("map_empty", one(new HashMap<>()));
        HashMap<String, Integer> m1 = new HashMap<>();
        m1.put("a", 1);
        v.put("map_a1", one(m1));
        TreeMap<String, Integer> tm = new TreeMap<>();
        tm.put("a", 1);
        tm.put("b", 2);
        v.put("treemap", one(tm));
        HashMap<Integer, String> intKeys = new HashMap<>();
        intKeys.put(1, "one");
        v.put("map_int_keys", one(intKeys));
        v.put("enum_male", one(Gender.MALE));
        v.put("address", one(new Address("Hangzhou", "West Lake", 310000)));
        v.put("user", one(user(1)));
        v.put("user_nulls", one(new User()));
        v.put("users_3", one(new ArrayList<>(List.of(user(0), user(1), user(2)))));
        User same = user(7);
        v.put("user_twice", new Object[] {same, same});
        v.put("user_shared_in_list", one(new ArrayList<>(List.of(same, same))));
        Address shared = new Address("c", "s", 1);
        User a = user(3);
        User b = user(4);
        a.setAddress(shared);
        b.setAddress(shared);
        v.put("shared_address", one(new ArrayList<>(List.of(a, b))));
        ArrayList<Object> cyc = new ArrayList<>();
        cyc.add("head");
        cyc.add(cyc);
        v.put("cyclic_list", one(cyc));
        v.put("bigdecimal", one(new BigDecimal("123.45")));
        v.put("bigdecimal_neg_exp", one(new BigDecimal("-1.5E-10")));
        v.put("biginteger", one(new BigInteger("123456789012345678901234567890")));
        v.put("biginteger_neg", one(new BigInteger("-42")));
        v.put("biginteger_zero", one(BigInteger.ZERO));
        InteropException ie = new InteropException("boom");
        ie.setStackTrace(new StackTraceElement[0]);
        v.put("exception_interop", one(ie));
        RuntimeException re = new RuntimeException("rt");
        re.setStackTrace(new StackTraceElement[0]);
        v.put("exception_runtime", one(re));
        RuntimeException withStack = new RuntimeException("with stack", new IllegalStateException("inner"));
        withStack.setStackTrace(new StackTraceElement[] {
            new StackTraceElement("org.rubbo.Demo", "run", "Demo.java", 42)});
        v.put("exception_cause_stack", one(withStack));
        HashMap<String, Object> att = new HashMap<>();
        att.put("path", "org.rubbo.interop.InteropService");
        att.put("version", "1.0.0");
        att.put("timeout", "3000");
        v.put("dubbo_request_echo_user", new Object[] {"2.0.2", "org.rubbo.interop.InteropService", "1.0.0",
            "echoUser", "Lorg/rubbo/interop/User;", user(5), att});
        v.put("dubbo_request_two_users", new Object[] {"2.0.2", "svc", "0.0.0", "m",
            "Lorg/rubbo/interop/User;Lorg/rubbo/interop/User;", user(1), user(2), new HashMap<>()});
        v.put("object_array", one(new Object[] {"s", 1}));
        v.put("local_date", one(java.time.LocalDate.of(2024, 1, 2)));
        return v;
    }
}
