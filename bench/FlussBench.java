// The Fluss side of bench/vs_fluss.py: a load generator on Apache Fluss 0.6.0's own Java client,
// the peer of bench/server_bench on oxbow::client. bench/vs_fluss.py compiles it (with
// BenchSupport.java) against fluss-client. Prints one JSON object per line.
//
//   FlussBench create --bootstrap H:P --table db.t --kind pk|events [--buckets 4]
//       [--codec NONE|LZ4_FRAME|ZSTD]
//     A primary-key table (k STRING primary key, v BYTES) bucketed by k, or a log table of the
//     20 columns of the events dataset (bench/datagen.h) with Arrow compression --codec.
//   FlussBench upsert --bootstrap H:P --table db.t --rows N --keyspace K [--key-bytes 16]
//       [--value-bytes 100] [--warmup-table db.w] [--client k=v,...]
//     Row i upserts key_of(splitmix64(i) % K) with value_of(i) through one UpsertWriter, then
//     flushes; first the same for min(N, 20000) rows into --warmup-table, off the clock.
//   FlussBench lookup --bootstrap H:P --table db.t --lookups N --keyspace K [--key-bytes 16]
//       [--window 1] [--client k=v,...]
//     Lookup j asks for key_of(splitmix64(j + 2^40) % K), with at most --window lookups
//     outstanding (1: one at a time, timed each); the first min(N, 2000) are a warm-up.
//   FlussBench append --bootstrap H:P --table db.t --records data.rows [--warmup-table db.w]
//       [--client k=v,...]
//     Decodes the records (bench/row_encoding.h) into rows, off the clock, then appends them
//     through one AppendWriter and flushes.
//   FlussBench scan --bootstrap H:P --table db.t --expect N [--columns a,b] [--reps 3]
//     One LogScanner reads every bucket from the beginning until it has N rows, --reps times.
//
// Keys and values are those of server_bench's upsert and lookup (bench/pk_data.h): both sides
// write the same rows. Fluss 0.6.0's client can hang a new connection forever on loopback (a
// start-up race, apache/fluss#413, fixed in 0.7): every connection is probed with a timed call
// and, on a timeout, replaced (at most five times).

import com.alibaba.fluss.client.Connection;
import com.alibaba.fluss.client.ConnectionFactory;
import com.alibaba.fluss.client.admin.Admin;
import com.alibaba.fluss.client.lookup.LookupResult;
import com.alibaba.fluss.client.lookup.Lookuper;
import com.alibaba.fluss.client.table.Table;
import com.alibaba.fluss.client.table.scanner.ScanRecord;
import com.alibaba.fluss.client.table.scanner.log.LogScanner;
import com.alibaba.fluss.client.table.scanner.log.ScanRecords;
import com.alibaba.fluss.client.table.writer.AppendWriter;
import com.alibaba.fluss.client.table.writer.UpsertWriter;
import com.alibaba.fluss.config.Configuration;
import com.alibaba.fluss.metadata.DatabaseDescriptor;
import com.alibaba.fluss.metadata.Schema;
import com.alibaba.fluss.metadata.TableDescriptor;
import com.alibaba.fluss.metadata.TablePath;
import com.alibaba.fluss.row.BinaryString;
import com.alibaba.fluss.row.GenericRow;
import com.alibaba.fluss.row.InternalRow;
import com.alibaba.fluss.row.TimestampLtz;
import com.alibaba.fluss.types.DataType;
import com.alibaba.fluss.types.DataTypes;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

public final class FlussBench {
  private FlussBench() {}

  private static final long GOLDEN = 0x9E3779B97F4A7C15L;
  private static final int PROBE_SECONDS = 10;

  public static void main(String[] args) throws Exception {
    BenchSupport.program = "FlussBench";
    if (args.length < 1) {
      BenchSupport.fail("usage: FlussBench create|upsert|lookup|append|scan --flags...");
    }
    Map<String, String> flags = BenchSupport.parseFlags(args);
    switch (args[0]) {
      case "create": create(flags); break;
      case "upsert": upsert(flags); break;
      case "lookup": lookup(flags); break;
      case "append": append(flags); break;
      case "scan": scan(flags); break;
      default: BenchSupport.fail("unknown command '" + args[0] + "'");
    }
    System.exit(0);  // the client's non-daemon threads would keep the JVM alive
  }

  // ---- keys and values: the same as bench/pk_data.h ----

  static long splitmix64(long x) {
    x += GOLDEN;
    x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
    x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
    return x ^ (x >>> 31);
  }

  // 'k' padding, then the 16 hex digits of index * golden ratio mod 2^64.
  static String keyOf(long index, int keyBytes) {
    StringBuilder key = new StringBuilder(keyBytes);
    for (int i = 16; i < keyBytes; ++i) {
      key.append('k');
    }
    String hex = Long.toHexString(index * GOLDEN);
    for (int i = hex.length(); i < 16; ++i) {
      key.append('0');
    }
    return key.append(hex).toString();
  }

  // Printable bytes: byte j is 33 + (byte j % 8 of splitmix64(i * 65536 + j / 8)) % 94.
  static byte[] valueOf(long row, int valueBytes) {
    byte[] value = new byte[valueBytes];
    long word = 0;
    for (int j = 0; j < valueBytes; ++j) {
      if (j % 8 == 0) {
        word = splitmix64(row * 65536 + j / 8);
      }
      value[j] = (byte) (33 + ((word >>> (8 * (j % 8))) & 0xff) % 94);
    }
    return value;
  }

  static long upsertKeyIndex(long row, long keyspace) {
    return Long.remainderUnsigned(splitmix64(row), keyspace);
  }

  static long lookupKeyIndex(long lookup, long keyspace) {
    return Long.remainderUnsigned(splitmix64(lookup + (1L << 40)), keyspace);
  }

  // ---- connections (apache/fluss#413) ----

  interface Probe {
    void run(Connection connection) throws Exception;
  }

  // A connection whose `probe` (a first call on it, with its own timeouts) finished. A
  // connection that hangs is closed and replaced, and so is one whose metadata does not know a
  // table created a moment ago: a new connection may ask another server.
  static Connection connect(Map<String, String> flags, Probe probe) throws Exception {
    Configuration conf = new Configuration();
    conf.setString("bootstrap.servers", BenchSupport.required(flags, "bootstrap"));
    for (Map.Entry<String, String> e : BenchSupport.keyValues(flags.get("client")).entrySet()) {
      conf.setString(e.getKey(), e.getValue());
    }
    Exception last = null;
    for (int attempt = 0; attempt < 10; ++attempt) {
      Connection connection = null;
      try {
        connection = ConnectionFactory.createConnection(conf);
        connection.getAdmin().getServerNodes().get(PROBE_SECONDS, TimeUnit.SECONDS);
        probe.run(connection);
        return connection;
      } catch (TimeoutException | IllegalStateException | IllegalArgumentException e) {
        last = e;
        System.err.println("FlussBench: replacing a new connection: " + e
            + (e instanceof TimeoutException ? " (apache/fluss#413 is one cause)" : ""));
        if (connection != null) {
          closeQuietly(connection);
        }
        Thread.sleep(1000);
      }
    }
    throw new IllegalStateException("no working connection to Fluss after 10 attempts", last);
  }

  static void closeQuietly(Connection connection) {
    Thread closer = new Thread(() -> {
      try {
        connection.close();
      } catch (Exception ignored) {
        // a hung connection may not close; the JVM exits anyway
      }
    });
    closer.setDaemon(true);
    closer.start();
  }

  // The table, once the connection's metadata knows it (a table created a moment ago may not
  // be there yet: IllegalArgumentException after 5 s).
  static Table table(Connection connection, TablePath path) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (true) {
      try {
        return connection.getTable(path);
      } catch (IllegalArgumentException e) {
        if (System.nanoTime() > deadline) {
          throw e;
        }
        Thread.sleep(200);
      }
    }
  }

  static TablePath path(Map<String, String> flags, String name) {
    String table = BenchSupport.required(flags, name);
    int dot = table.indexOf('.');
    if (dot <= 0) {
      BenchSupport.fail("--" + name + " must be db.table");
    }
    return TablePath.of(table.substring(0, dot), table.substring(dot + 1));
  }

  static <T> T await(CompletableFuture<T> future) throws Exception {
    return future.get(60, TimeUnit.SECONDS);
  }

  // ---- create ----

  static final String[] EVENT_COLUMNS = {"event_id", "event_time", "user_id", "item_id",
      "quantity", "price", "country", "currency", "event_type", "url", "session_id", "discount",
      "latitude", "longitude", "device", "referrer", "page_title", "search_query", "tags",
      "comment"};

  static DataType eventType(int column) {
    switch (column) {
      case 0: case 2: case 10: return DataTypes.BIGINT();
      case 1: return DataTypes.TIMESTAMP_LTZ(6);
      case 3: case 4: return DataTypes.INT();
      case 5: case 11: case 12: case 13: return DataTypes.DOUBLE();
      default: return DataTypes.STRING();
    }
  }

  private static void create(Map<String, String> flags) throws Exception {
    TablePath table = path(flags, "table");
    int buckets = Integer.parseInt(flags.getOrDefault("buckets", "4"));
    Connection connection = connect(flags, c -> {});
    Admin admin = connection.getAdmin();
    await(admin.createDatabase(table.getDatabaseName(), DatabaseDescriptor.EMPTY, true));
    TableDescriptor descriptor;
    if (BenchSupport.required(flags, "kind").equals("pk")) {
      Schema schema = Schema.newBuilder()
          .column("k", DataTypes.STRING())
          .column("v", DataTypes.BYTES())
          .primaryKey("k")
          .build();
      descriptor = TableDescriptor.builder().schema(schema).distributedBy(buckets, "k").build();
    } else {
      Schema.Builder schema = Schema.newBuilder();
      for (int c = 0; c < EVENT_COLUMNS.length; ++c) {
        schema.column(EVENT_COLUMNS[c], eventType(c));
      }
      descriptor = TableDescriptor.builder()
          .schema(schema.build())
          .distributedBy(buckets)
          .property("table.log.arrow.compression.type", flags.getOrDefault("codec", "ZSTD"))
          .build();
    }
    await(admin.createTable(table, descriptor, true));
    closeQuietly(connection);
    // Seen by a new connection, as the workloads will open one.
    closeQuietly(connect(flags, c -> table(c, table)));
    new BenchSupport.JsonLine().add("op", "create").add("table", table.toString()).print();
  }

  // ---- upsert ----

  static void upsertRows(UpsertWriter writer, long rows, long keyspace, int keyBytes,
                         int valueBytes, AtomicReference<Throwable> error) {
    for (long i = 0; i < rows; ++i) {
      GenericRow row = GenericRow.of(
          BinaryString.fromString(keyOf(upsertKeyIndex(i, keyspace), keyBytes)),
          valueOf(i, valueBytes));
      writer.upsert(row).whenComplete((result, e) -> {
        if (e != null) {
          error.compareAndSet(null, e);
        }
      });
    }
    writer.flush();
  }

  private static void upsert(Map<String, String> flags) throws Exception {
    long rows = Long.parseLong(BenchSupport.required(flags, "rows"));
    long keyspace = Long.parseLong(BenchSupport.required(flags, "keyspace"));
    int keyBytes = Integer.parseInt(flags.getOrDefault("key-bytes", "16"));
    int valueBytes = Integer.parseInt(flags.getOrDefault("value-bytes", "100"));
    TablePath table = path(flags, "table");
    AtomicReference<Throwable> error = new AtomicReference<>();
    AtomicReference<UpsertWriter> measured = new AtomicReference<>();
    connect(flags, c -> {
      measured.set(table(c, table).newUpsert().createWriter());
      if (flags.containsKey("warmup-table")) {
        UpsertWriter warm = table(c, path(flags, "warmup-table")).newUpsert().createWriter();
        await(CompletableFuture.runAsync(() -> upsertRows(warm, Math.min(rows, 20_000), keyspace,
                                                           keyBytes, valueBytes, error)));
      }
    });
    UpsertWriter writer = measured.get();
    long start = System.nanoTime();
    upsertRows(writer, rows, keyspace, keyBytes, valueBytes, error);
    double seconds = (System.nanoTime() - start) / 1e9;
    if (error.get() != null) {
      BenchSupport.fail("upsert: " + error.get());
    }
    new BenchSupport.JsonLine()
        .add("op", "upsert")
        .add("rows", rows)
        .add("seconds", seconds)
        .add("rows_per_second", rows / seconds)
        .print();
  }

  // ---- lookup ----

  private static void lookup(Map<String, String> flags) throws Exception {
    long lookups = Long.parseLong(BenchSupport.required(flags, "lookups"));
    long keyspace = Long.parseLong(BenchSupport.required(flags, "keyspace"));
    int keyBytes = Integer.parseInt(flags.getOrDefault("key-bytes", "16"));
    int window = Integer.parseInt(flags.getOrDefault("window", "1"));
    TablePath table = path(flags, "table");
    AtomicReference<Lookuper> lookuper = new AtomicReference<>();
    Connection connection = connect(flags, c -> {
      lookuper.set(table(c, table).newLookup().createLookuper());
      lookUp(lookuper.get(), Math.min(lookups, 2000), keyspace, keyBytes, window);
    });
    long start = System.nanoTime();
    Lookups done = lookUp(lookuper.get(), lookups, keyspace, keyBytes, window);
    double seconds = (System.nanoTime() - start) / 1e9;
    new BenchSupport.JsonLine()
        .add("op", "lookup")
        .add("lookups", lookups)
        .add("window", window)
        .add("found", done.found)
        .add("seconds", seconds)
        .add("keys_per_second", lookups / seconds)
        .add("p50_us", BenchSupport.percentile(done.latencies, 0.5))
        .add("p99_us", BenchSupport.percentile(done.latencies, 0.99))
        .print();
    closeQuietly(connection);
  }

  static final class Lookups {
    long found;
    double[] latencies;  // µs of each lookup, sorted; empty unless one at a time
  }

  // Lookups 0..n-1 with at most `window` outstanding (1: one at a time, each timed).
  static Lookups lookUp(Lookuper lookuper, long n, long keyspace, int keyBytes, int window)
      throws Exception {
    Lookups out = new Lookups();
    out.latencies = new double[window == 1 ? (int) n : 0];
    AtomicLong found = new AtomicLong();
    AtomicReference<Throwable> error = new AtomicReference<>();
    Semaphore outstanding = new Semaphore(window);
    for (long j = 0; j < n; ++j) {
      InternalRow key = keyRow(j, keyspace, keyBytes);
      if (window == 1) {
        long asked = System.nanoTime();
        LookupResult result = await(lookuper.lookup(key));
        out.latencies[(int) j] = (System.nanoTime() - asked) / 1e3;
        if (result.getSingletonRow() != null) {
          found.incrementAndGet();
        }
        continue;
      }
      outstanding.acquire();
      lookuper.lookup(key).whenComplete((result, e) -> {
        if (e != null) {
          error.compareAndSet(null, e);
        } else if (result.getSingletonRow() != null) {
          found.incrementAndGet();
        }
        outstanding.release();
      });
    }
    if (!outstanding.tryAcquire(window, 60, TimeUnit.SECONDS)) {
      throw new TimeoutException("lookups still outstanding after 60 s");
    }
    if (error.get() != null) {
      BenchSupport.fail("lookup: " + error.get());
    }
    Arrays.sort(out.latencies);
    out.found = found.get();
    return out;
  }

  static InternalRow keyRow(long lookup, long keyspace, int keyBytes) {
    return GenericRow.of(
        BinaryString.fromString(keyOf(lookupKeyIndex(lookup, keyspace), keyBytes)));
  }

  // ---- append ----

  // One row of the records file (bench/row_encoding.h) as a row of the events table.
  static GenericRow decodeEvent(byte[] record) {
    ByteBuffer in = ByteBuffer.wrap(record).order(ByteOrder.LITTLE_ENDIAN);
    int bitmapBytes = (EVENT_COLUMNS.length + 7) / 8;
    byte[] nulls = new byte[bitmapBytes];
    in.get(nulls);
    GenericRow row = new GenericRow(EVENT_COLUMNS.length);
    for (int c = 0; c < EVENT_COLUMNS.length; ++c) {
      if ((nulls[c / 8] >> (c % 8) & 1) != 0) {
        continue;
      }
      switch (c) {
        case 0: case 2: case 10: row.setField(c, zigzag(in)); break;
        case 1: row.setField(c, TimestampLtz.fromEpochMicros(zigzag(in))); break;
        case 3: case 4: row.setField(c, (int) zigzag(in)); break;
        case 5: case 11: case 12: case 13: row.setField(c, in.getDouble()); break;
        default: {
          byte[] bytes = new byte[(int) varint(in)];
          in.get(bytes);
          row.setField(c, BinaryString.fromBytes(bytes));
        }
      }
    }
    return row;
  }

  static long varint(ByteBuffer in) {
    long value = 0;
    for (int shift = 0;; shift += 7) {
      byte b = in.get();
      value |= (long) (b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        return value;
      }
    }
  }

  static long zigzag(ByteBuffer in) {
    long v = varint(in);
    return (v >>> 1) ^ -(v & 1);
  }

  static void appendRows(AppendWriter writer, List<GenericRow> rows,
                         AtomicReference<Throwable> error) {
    for (GenericRow row : rows) {
      writer.append(row).whenComplete((result, e) -> {
        if (e != null) {
          error.compareAndSet(null, e);
        }
      });
    }
    writer.flush();
  }

  private static void append(Map<String, String> flags) throws Exception {
    List<GenericRow> rows = new ArrayList<>();
    for (byte[] record : BenchSupport.readRecords(BenchSupport.required(flags, "records"))) {
      rows.add(decodeEvent(record));
    }
    TablePath table = path(flags, "table");
    AtomicReference<Throwable> error = new AtomicReference<>();
    AtomicReference<AppendWriter> measured = new AtomicReference<>();
    connect(flags, c -> {
      measured.set(table(c, table).newAppend().createWriter());
      if (flags.containsKey("warmup-table")) {
        AppendWriter warm = table(c, path(flags, "warmup-table")).newAppend().createWriter();
        await(CompletableFuture.runAsync(
            () -> appendRows(warm, rows.subList(0, Math.min(rows.size(), 20_000)), error)));
      }
    });
    AppendWriter writer = measured.get();
    long start = System.nanoTime();
    appendRows(writer, rows, error);
    double seconds = (System.nanoTime() - start) / 1e9;
    if (error.get() != null) {
      BenchSupport.fail("append: " + error.get());
    }
    new BenchSupport.JsonLine()
        .add("op", "append")
        .add("rows", rows.size())
        .add("seconds", seconds)
        .add("rows_per_second", rows.size() / seconds)
        .print();
  }

  // ---- scan ----

  private static void scan(Map<String, String> flags) throws Exception {
    long expect = Long.parseLong(BenchSupport.required(flags, "expect"));
    int reps = Integer.parseInt(flags.getOrDefault("reps", "3"));
    String columns = flags.get("columns");
    TablePath table = path(flags, "table");
    AtomicReference<Table> found = new AtomicReference<>();
    connect(flags, c -> found.set(table(c, table)));
    Table t = found.get();
    int buckets = t.getTableInfo().getNumBuckets();
    List<Double> times = new ArrayList<>();
    for (int rep = 0; rep < reps; ++rep) {
      LogScanner scanner = columns == null
          ? t.newScan().createLogScanner()
          : t.newScan().project(Arrays.asList(columns.split(","))).createLogScanner();
      for (int b = 0; b < buckets; ++b) {
        scanner.subscribeFromBeginning(b);
      }
      long seen = 0;
      long checksum = 0;
      long start = System.nanoTime();
      long deadline = start + TimeUnit.SECONDS.toNanos(120);
      while (seen < expect) {
        if (System.nanoTime() > deadline) {
          BenchSupport.fail("scan: " + seen + " of " + expect + " rows after 120 s");
        }
        ScanRecords records = scanner.poll(Duration.ofMillis(500));
        for (ScanRecord record : records) {
          checksum += record.getRow().getFieldCount();
          ++seen;
        }
      }
      times.add((System.nanoTime() - start) / 1e9);
      scanner.close();
      if (checksum == 0) {
        BenchSupport.fail("scan: rows without fields");
      }
    }
    times.sort(null);
    double best = times.get(0);
    double median = times.get(times.size() / 2);
    new BenchSupport.JsonLine()
        .add("op", "scan")
        .add("rows", expect)
        .add("columns", columns == null ? "all" : columns)
        .add("best_seconds", best)
        .add("median_seconds", median)
        .add("rows_per_second", expect / median)
        .print();
  }
}
