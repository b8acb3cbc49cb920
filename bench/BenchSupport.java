// What the Java load generators of the side-by-side benchmarks share (bench/KafkaBench.java,
// bench/FlussBench.java): flags, the records file, CPU times, percentiles and JSON lines. Each
// driver compiles it with its generator.

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

final class BenchSupport {
  private BenchSupport() {}

  // The program named in error messages.
  static String program = "bench";

  static Map<String, String> parseFlags(String[] args) {
    Map<String, String> flags = new HashMap<>();
    for (int i = 1; i < args.length; ++i) {
      String name = args[i];
      if (!name.startsWith("--")) {
        fail("unexpected argument '" + name + "'");
      }
      String value = "1"; // a flag without a value
      if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
        value = args[++i];
      }
      flags.put(name.substring(2), value);
    }
    return flags;
  }

  static String required(Map<String, String> flags, String name) {
    String value = flags.get(name);
    if (value == null || value.isEmpty()) {
      fail("--" + name + " is required");
    }
    return value;
  }

  // "k=v,k=v" into properties (values may not contain commas).
  static Map<String, String> keyValues(String text) {
    Map<String, String> values = new HashMap<>();
    if (text == null || text.isEmpty()) {
      return values;
    }
    for (String pair : text.split(",")) {
      int eq = pair.indexOf('=');
      if (eq <= 0) {
        fail("'" + pair + "' is not key=value");
      }
      values.put(pair.substring(0, eq), pair.substring(eq + 1));
    }
    return values;
  }

  static byte[][] readRecords(String path) throws IOException {
    List<byte[]> records = new ArrayList<>();
    try (DataInputStream in = new DataInputStream(
             new BufferedInputStream(Files.newInputStream(Path.of(path)), 1 << 20))) {
      while (true) {
        int length;
        try {
          length = Integer.reverseBytes(in.readInt()); // little-endian on disk
        } catch (EOFException end) {
          break;
        }
        byte[] record = new byte[length];
        in.readFully(record);
        records.add(record);
      }
    }
    return records.toArray(new byte[0][]);
  }

  // CPU time (user + system) of this JVM so far, in seconds.
  static double processCpuSeconds() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
               .getProcessCpuTime()
        / 1e9;
  }

  // CPU time (user + system) of process `pid` so far, from /proc/<pid>/stat, in seconds (Linux
  // counts it in ticks of 1/100 s: USER_HZ); 0 without a pid.
  static double otherProcessCpuSeconds(long pid) throws IOException {
    if (pid == 0) {
      return 0;
    }
    String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
    // After the command name, which is in parentheses: state, then utime and stime are the
    // 12th and 13th fields.
    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) / 100.0;
  }

  static double percentile(double[] sorted, double q) {
    if (sorted.length == 0) {
      return 0;
    }
    int rank = (int) (q * sorted.length);
    return sorted[Math.min(rank, sorted.length - 1)];
  }

  static final class JsonLine {
    private final StringBuilder body = new StringBuilder();

    JsonLine add(String key, Object value) {
      body.append(body.length() == 0 ? "{" : ",").append('"').append(key).append("\":");
      if (value instanceof String) {
        body.append('"').append(value).append('"');
      } else {
        body.append(value);
      }
      return this;
    }

    void print() {
      System.out.println(body.append('}'));
      System.out.flush();
    }
  }

  static void fail(String message) {
    System.err.println(program + ": error: " + message);
    System.exit(1);
  }
}
