package org.rubbo.hessiangen;

import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

import com.alibaba.com.caucho.hessian.io.Hessian2Output;
import com.alibaba.com.caucho.hessian.io.SerializerFactory;

/** Writes every vector of {@link Vectors} with hessian-lite: one NAME.bin per vector plus index.txt. */
public final class Gen {
    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        Files.createDirectories(dir);
        SerializerFactory f = new SerializerFactory();
        StringBuilder index = new StringBuilder();
        for (Map.Entry<String, Object[]> e : Vectors.all().entrySet()) {
            ByteArrayOutputStream bos = new ByteArrayOutputStream();
            Hessian2Output out = new Hessian2Output(bos);
            out.setSerializerFactory(f);
            for (Object o : e.getValue()) out.writeObject(o);
            out.flush();
            byte[] b = bos.toByteArray();
            Files.write(dir.resolve(e.getKey() + ".bin"), b);
            index.append(e.getKey()).append(' ').append(e.getValue().length).append(' ').append(b.length).append('\n');
        }
        Files.write(dir.resolve("index.txt"), index.toString().getBytes(StandardCharsets.UTF_8));
        System.out.println("wrote " + Vectors.all().size() + " vectors to " + dir);
    }
}
