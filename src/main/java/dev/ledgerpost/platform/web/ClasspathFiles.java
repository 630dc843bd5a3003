package dev.ledgerpost.platform.web;

import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.file.FileSystem;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;

/**
 * Reads of classpath resources that write nothing. vertx-openapi loads the OpenAPI and JSON Schema
 * meta-schemas from its jars through {@code vertx.fileSystem()}, and Vert.x serves a classpath resource
 * by copying it into its file cache first. For the contract alone, a Vert.x whose file system reads the
 * classpath directly is handed to vertx-openapi; everything else goes to the real one.
 */
public final class ClasspathFiles {
  private ClasspathFiles() {}

  public static byte[] read(String resource) throws IOException {
    try (InputStream in = ClasspathFiles.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new FileNotFoundException(resource + " is not on the classpath");
      }
      return in.readAllBytes();
    }
  }

  /** {@code vertx}, but with readFile/readFileBlocking of a relative path answered from the classpath. */
  public static Vertx readingClasspath(Vertx vertx) {
    FileSystem real = vertx.fileSystem();
    FileSystem files = proxy(FileSystem.class, real, (m, args) -> {
      if (args != null && args.length == 1 && args[0] instanceof String path && !path.startsWith("/")
          && ClasspathFiles.class.getClassLoader().getResource(path) != null) {
        if (m.getName().equals("readFileBlocking")) {
          return Buffer.buffer(readUnchecked(path));
        }
        if (m.getName().equals("readFile")) {
          return vertx.executeBlocking(() -> Buffer.buffer(read(path)));
        }
      }
      return NOT_HANDLED;
    });
    return proxy(Vertx.class, vertx, (m, args) -> m.getName().equals("fileSystem") && args == null ? files : NOT_HANDLED);
  }

  private static final Object NOT_HANDLED = new Object();

  private interface Intercept {
    Object apply(Method method, Object[] args) throws Exception;
  }

  private static <T> T proxy(Class<T> type, T delegate, Intercept intercept) {
    InvocationHandler handler = (p, method, args) -> {
      Object result = intercept.apply(method, args);
      if (result != NOT_HANDLED) {
        return result;
      }
      try {
        return method.invoke(delegate, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    };
    return type.cast(Proxy.newProxyInstance(ClasspathFiles.class.getClassLoader(), new Class<?>[] {type}, handler));
  }

  private static byte[] readUnchecked(String path) {
    try {
      return read(path);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
