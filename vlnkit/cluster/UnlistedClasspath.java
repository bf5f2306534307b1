// Starts a Java program from jars that Beam's classpath scan cannot list, so that Beam's Flink job server
// stages nothing with each job.
//
// Why: the job server (FlinkJobInvoker) hands a ClassGraph scan of its own class loader to Flink as the job's
// user jars: all 161 jars, 152 MB, uploaded to the JobManager's blob server with every job and fetched by every
// TaskManager (26 s per job alone, 41 s each with twelve submitted together). The session cluster that
// `vlnkit flink-cluster start` runs already has every one of those classes on its JobManager's and
// TaskManagers' classpath and resolves parent-first, so the copies are never used. Beam offers no switch for
// it from Python (the detector is an option of PipelineResourcesOptions, which the job server does not list,
// and Python's PortableRunner drops options the job server does not list).
//
// How: this class is the JVM's system class loader. It is neither a URLClassLoader nor has a field or method
// ClassGraph's fallback handler looks for; it defines the classes itself from class files and resources it
// reads through a private URLClassLoader that defines nothing. What the scan then finds is this class's own
// jar (java.class.path), which is staged instead: a few kilobytes. Being the system class loader (not only the
// main class's), it also serves the code that resolves classes through ClassLoader.getSystemClassLoader():
// Flink's client deserializes a failed job's exception that way.
//
// Usage: java -Djava.system.class.loader=UnlistedClasspath -Dvlnkit.unlisted.classpath=CLASSPATH
//            -cp unlisted-classpath.jar MAIN_CLASS [ARGS...]
// Compiled at install time (`python -m vlnkit.parts flink`, vlnkit/cluster/java_parts.py).

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.JarURLConnection;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.net.URLConnection;
import java.security.CodeSource;
import java.security.ProtectionDomain;
import java.security.cert.Certificate;
import java.util.Enumeration;
import java.util.concurrent.ConcurrentHashMap;

public final class UnlistedClasspath extends ClassLoader {
  public static final String PROPERTY = "vlnkit.unlisted.classpath";

  static {
    ClassLoader.registerAsParallelCapable();
  }

  private final URLClassLoader hidden;
  private final ConcurrentHashMap<URL, ProtectionDomain> domains = new ConcurrentHashMap<>();

  /** The JVM calls this with the default system class loader (which holds this class's jar) as parent. */
  public UnlistedClasspath(ClassLoader parent) throws MalformedURLException {
    super("vlnkit-unlisted", parent);
    String classpath = System.getProperty(PROPERTY);
    if (classpath == null) {
      throw new IllegalStateException("-D" + PROPERTY + "=CLASSPATH is not set");
    }
    String[] entries = classpath.split(File.pathSeparator);
    URL[] jars = new URL[entries.length];
    for (int i = 0; i < entries.length; i++) {
      jars[i] = new File(entries[i]).toURI().toURL();
    }
    // Parent null: it only reads bytes and resources and never defines a class.
    this.hidden = new URLClassLoader(jars, null);
  }

  @Override
  protected Class<?> findClass(String name) throws ClassNotFoundException {
    URL url = hidden.findResource(name.replace('.', '/') + ".class");
    if (url == null) {
      throw new ClassNotFoundException(name);
    }
    try {
      URLConnection connection = url.openConnection();
      byte[] bytes;
      try (InputStream in = connection.getInputStream()) {
        bytes = in.readAllBytes();
      }
      int dot = name.lastIndexOf('.');
      if (dot > 0 && getDefinedPackage(name.substring(0, dot)) == null) {
        try {
          definePackage(name.substring(0, dot), null, null, null, null, null, null, null);
        } catch (IllegalArgumentException definedMeanwhile) {
          // another thread defined it first
        }
      }
      return defineClass(name, bytes, 0, bytes.length, domain(connection));
    } catch (IOException e) {
      throw new ClassNotFoundException(name, e);
    }
  }

  // The class's jar as its code source, as a URLClassLoader gives it (some code asks where a class came from).
  private ProtectionDomain domain(URLConnection connection) {
    if (!(connection instanceof JarURLConnection)) {
      return null;
    }
    URL jar = ((JarURLConnection) connection).getJarFileURL();
    return domains.computeIfAbsent(
        jar, j -> new ProtectionDomain(new CodeSource(j, (Certificate[]) null), null, this, null));
  }

  @Override
  protected URL findResource(String name) {
    return hidden.findResource(name);
  }

  @Override
  protected Enumeration<URL> findResources(String name) throws IOException {
    return hidden.findResources(name);
  }
}
