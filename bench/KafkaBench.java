// The Kafka side of bench/vs_kafka.py: a load generator on Kafka's own Java client
// (kafka-clients), the peer of bench/server_bench on oxbow::client. bench/vs_kafka.py compiles it
// with javac against the Kafka classpath it fetched. Prints one JSON object per line.
//
//   KafkaBench produce --bootstrap H:P --topic T --records data.rows --batch-rows 1024
//       [--producers 4] [--partitions 4] [--topic-config k=v,...] [--producer k=v,...]
//       [--warmup-records N] [--server-pid PID]
//     Creates topic T (and T-warmup), then producer p (its own KafkaProducer and thread) sends
//     the rows of batches p, p+P, p+2P, ... of --batch-rows rows, one record per row, and
//     flushes. Before the clock starts each producer sends its share of the first
//     --warmup-records rows to T-warmup, so the JIT has compiled the send path.
//   KafkaBench rate --bootstrap H:P --topic T --records data.rows --rows-per-second R
//       [--seconds 10] [--warmup-seconds 2] [--partitions 4] [--topic-config k=v,...]
//       [--producer k=v,...] [--consumer k=v,...]
//     Creates T; one producer sends row i (rows cycled) when it is due, at start + i/R, and a
//     consumer tails every partition. Per row: ack latency = callback - due time, end-to-end
//     latency = arrival at the consumer - due time. Rows due in the first --warmup-seconds are
//     left out of the percentiles.
//   KafkaBench consume --bootstrap H:P --topic T --expect N [--reps 3] [--consumer k=v,...]
//     One consumer reads every partition of T from the beginning until it has N records, --reps
//     times (best and median).
//   produce and consume take --server-pid PID and report the CPU time (user + system) of this
//   JVM and of the broker over the measured part (consume: per rep).
//   KafkaBench delete-topics --bootstrap H:P --topics a,b
//
// The records file holds one record per row: a u32 little-endian length, then the bytes.

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class KafkaBench {
  private KafkaBench() {}

  public static void main(String[] args) throws Exception {
    BenchSupport.program = "KafkaBench";
    if (args.length < 1) {
      BenchSupport.fail("usage: KafkaBench produce|rate|consume|delete-topics --flags...");
    }
    Map<String, String> flags = BenchSupport.parseFlags(args);
    switch (args[0]) {
      case "produce": produce(flags); break;
      case "rate": rate(flags); break;
      case "consume": consume(flags); break;
      case "delete-topics": deleteTopics(flags); break;
      default: BenchSupport.fail("unknown command '" + args[0] + "'");
    }
  }

  // ---- flags, records, output ----

  // ---- clients and topics ----

  private static Properties producerProperties(Map<String, String> flags) {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BenchSupport.required(flags, "bootstrap"));
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    props.putAll(BenchSupport.keyValues(flags.get("producer")));
    return props;
  }

  private static Properties consumerProperties(Map<String, String> flags) {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BenchSupport.required(flags, "bootstrap"));
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    props.put(
        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.putAll(BenchSupport.keyValues(flags.get("consumer")));
    return props;
  }

  private static void createTopics(Map<String, String> flags, int partitions, String... topics)
      throws Exception {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BenchSupport.required(flags, "bootstrap"));
    List<NewTopic> newTopics = new ArrayList<>();
    for (String topic : topics) {
      newTopics.add(
          new NewTopic(topic, partitions, (short) 1).configs(BenchSupport.keyValues(flags.get("topic-config"))));
    }
    try (Admin admin = Admin.create(props)) {
      admin.createTopics(newTopics).all().get(60, TimeUnit.SECONDS);
    }
  }

  private static void deleteTopics(Map<String, String> flags) throws Exception {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BenchSupport.required(flags, "bootstrap"));
    try (Admin admin = Admin.create(props)) {
      admin.deleteTopics(Arrays.asList(BenchSupport.required(flags, "topics").split(",")))
          .all()
          .get(60, TimeUnit.SECONDS);
    }
    new BenchSupport.JsonLine().add("op", "delete-topics").add("topics", flags.get("topics")).print();
  }

  private static double producerMetric(KafkaProducer<byte[], byte[]> producer, String name) {
    for (Map.Entry<MetricName, ? extends Metric> entry : producer.metrics().entrySet()) {
      if (entry.getKey().name().equals(name) && entry.getKey().group().equals("producer-metrics")) {
        Object value = entry.getValue().metricValue();
        return value instanceof Double ? (Double) value : Double.NaN;
      }
    }
    return Double.NaN;
  }

  // ---- produce: maximum throughput ----

  private static void produce(Map<String, String> flags) throws Exception {
    String topic = BenchSupport.required(flags, "topic");
    String warmupTopic = topic + "-warmup";
    int producers = Integer.parseInt(flags.getOrDefault("producers", "4"));
    int partitions = Integer.parseInt(flags.getOrDefault("partitions", "4"));
    int batchRows = Integer.parseInt(BenchSupport.required(flags, "batch-rows"));
    long serverPid = Long.parseLong(flags.getOrDefault("server-pid", "0"));
    byte[][] records = BenchSupport.readRecords(BenchSupport.required(flags, "records"));
    int warmupRecords =
        Math.min(records.length, Integer.parseInt(flags.getOrDefault("warmup-records", "0")));
    createTopics(flags, partitions, topic, warmupTopic);

    List<KafkaProducer<byte[], byte[]>> clients = new ArrayList<>();
    for (int p = 0; p < producers; ++p) {
      KafkaProducer<byte[], byte[]> client = new KafkaProducer<>(producerProperties(flags));
      client.partitionsFor(topic); // fetch metadata before the clock starts
      client.partitionsFor(warmupTopic);
      clients.add(client);
    }
    AtomicReference<Exception> error = new AtomicReference<>();
    Callback onAck = (metadata, exception) -> {
      if (exception != null) {
        error.compareAndSet(null, exception);
      }
    };
    // Warm-up, then the measured run, each with all producers at once.
    for (int phase = 0; phase < 2; ++phase) {
      final boolean warmup = phase == 0;
      List<Thread> threads = new ArrayList<>();
      for (int p = 0; p < producers; ++p) {
        final int index = p;
        threads.add(new Thread(() -> {
          KafkaProducer<byte[], byte[]> client = clients.get(index);
          if (warmup) {
            for (int r = index; r < warmupRecords; r += producers) {
              client.send(new ProducerRecord<>(warmupTopic, records[r]), onAck);
            }
          } else {
            for (int first = index * batchRows; first < records.length;
                 first += producers * batchRows) {
              int end = Math.min(first + batchRows, records.length);
              for (int r = first; r < end; ++r) {
                client.send(new ProducerRecord<>(topic, records[r]), onAck);
              }
            }
          }
          client.flush();
        }));
      }
      double serverCpuStart = BenchSupport.otherProcessCpuSeconds(serverPid);
      double cpuStart = BenchSupport.processCpuSeconds();
      long start = System.nanoTime();
      for (Thread t : threads) {
        t.start();
      }
      for (Thread t : threads) {
        t.join();
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      double clientCpu = BenchSupport.processCpuSeconds() - cpuStart;
      double serverCpu = BenchSupport.otherProcessCpuSeconds(serverPid) - serverCpuStart;
      if (error.get() != null) {
        BenchSupport.fail("produce: " + error.get());
      }
      if (!warmup) {
        long bytes = 0;
        for (byte[] record : records) {
          bytes += record.length;
        }
        new BenchSupport.JsonLine()
            .add("op", "produce")
            .add("producers", producers)
            .add("seconds", seconds)
            .add("client_cpu_seconds", clientCpu)
            .add("server_cpu_seconds", serverCpu)
            .add("records", records.length)
            .add("bytes", bytes)
            .add("batch_size_avg", producerMetric(clients.get(0), "batch-size-avg"))
            .add("records_per_request_avg",
                producerMetric(clients.get(0), "records-per-request-avg"))
            .add("compression_rate_avg", producerMetric(clients.get(0), "compression-rate-avg"))
            .add("request_latency_avg_ms", producerMetric(clients.get(0), "request-latency-avg"))
            .print();
      }
    }
    for (KafkaProducer<byte[], byte[]> client : clients) {
      client.close();
    }
  }

  // ---- rate: fixed-rate produce, ack and end-to-end latency ----

  private static void rate(Map<String, String> flags) throws Exception {
    String topic = BenchSupport.required(flags, "topic");
    int partitions = Integer.parseInt(flags.getOrDefault("partitions", "4"));
    double rowsPerSecond = Double.parseDouble(BenchSupport.required(flags, "rows-per-second"));
    double seconds = Double.parseDouble(flags.getOrDefault("seconds", "10"));
    double warmupSeconds = Double.parseDouble(flags.getOrDefault("warmup-seconds", "2"));
    byte[][] records = BenchSupport.readRecords(BenchSupport.required(flags, "records"));
    final int total = (int) ((warmupSeconds + seconds) * rowsPerSecond);
    final int warmupRows = (int) (warmupSeconds * rowsPerSecond);
    createTopics(flags, partitions, topic);
    List<TopicPartition> topicPartitions = new ArrayList<>();
    for (int p = 0; p < partitions; ++p) {
      topicPartitions.add(new TopicPartition(topic, p));
    }

    KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProperties(flags));
    producer.partitionsFor(topic);
    KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties(flags));
    consumer.assign(topicPartitions);
    consumer.seekToBeginning(topicPartitions);
    for (TopicPartition tp : topicPartitions) {
      consumer.position(tp); // resolves the position before the clock starts
    }

    // The topic is new, so a (partition, offset) names one row of this run: the producer's
    // callbacks learn which, the consumer notes when it arrived.
    final int[][] rowAt = new int[partitions][total];
    final long[][] arrivedAt = new long[partitions][total];
    final double[] ackLatencies = new double[total - warmupRows];
    final long start = System.nanoTime() + 10_000_000L;
    final double nanosPerRow = 1e9 / rowsPerSecond;
    AtomicLong received = new AtomicLong();
    AtomicLong lastAck = new AtomicLong(start);
    AtomicReference<Exception> error = new AtomicReference<>();
    Thread tail = new Thread(() -> {
      long deadline = System.nanoTime() + (long) ((warmupSeconds + seconds + 60) * 1e9);
      while (received.get() < total && System.nanoTime() < deadline) {
        for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(100))) {
          arrivedAt[record.partition()][(int) record.offset()] = System.nanoTime();
          received.incrementAndGet();
        }
      }
    });
    tail.start();

    CountDownLatch acked = new CountDownLatch(total);
    for (int row = 0; row < total; ++row) {
      long due = start + (long) (row * nanosPerRow);
      long wait = due - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(wait);
      }
      final int index = row;
      producer.send(
          new ProducerRecord<>(topic, records[row % records.length]), (metadata, exception) -> {
            long now = System.nanoTime();
            if (exception != null) {
              error.compareAndSet(null, exception);
            } else {
              rowAt[metadata.partition()][(int) metadata.offset()] = index;
            }
            if (index >= warmupRows) {
              ackLatencies[index - warmupRows] = (now - start - index * nanosPerRow) / 1e6;
            }
            lastAck.accumulateAndGet(now, Math::max);
            acked.countDown();
          });
    }
    producer.flush();
    if (!acked.await(60, TimeUnit.SECONDS)) {
      BenchSupport.fail("rate: not every record was acknowledged");
    }
    tail.join();
    producer.close();
    consumer.close();
    if (error.get() != null) {
      BenchSupport.fail("rate: " + error.get());
    }
    if (received.get() < total) {
      BenchSupport.fail("rate: the consumer saw " + received.get() + " of " + total + " records");
    }
    double[] e2eLatencies = new double[total - warmupRows];
    int measured = 0;
    for (int p = 0; p < partitions; ++p) {
      for (int offset = 0; offset < total && arrivedAt[p][offset] != 0; ++offset) {
        int row = rowAt[p][offset];
        if (row >= warmupRows) {
          e2eLatencies[measured++] = (arrivedAt[p][offset] - start - row * nanosPerRow) / 1e6;
        }
      }
    }
    if (measured != e2eLatencies.length) {
      BenchSupport.fail("rate: matched " + measured + " arrivals");
    }
    Arrays.sort(ackLatencies);
    Arrays.sort(e2eLatencies);
    new BenchSupport.JsonLine()
        .add("op", "rate")
        .add("rows_per_second", rowsPerSecond)
        .add("partitions", partitions)
        .add("rows", total)
        .add("measured_rows", total - warmupRows)
        .add("achieved_rows_per_second", total / ((lastAck.get() - start) / 1e9))
        .add("ack_p50_ms", BenchSupport.percentile(ackLatencies, 0.50))
        .add("ack_p99_ms", BenchSupport.percentile(ackLatencies, 0.99))
        .add("ack_p999_ms", BenchSupport.percentile(ackLatencies, 0.999))
        .add("ack_max_ms", BenchSupport.percentile(ackLatencies, 1.0))
        .add("e2e_p50_ms", BenchSupport.percentile(e2eLatencies, 0.50))
        .add("e2e_p99_ms", BenchSupport.percentile(e2eLatencies, 0.99))
        .add("e2e_p999_ms", BenchSupport.percentile(e2eLatencies, 0.999))
        .add("e2e_max_ms", BenchSupport.percentile(e2eLatencies, 1.0))
        .print();
  }

  // ---- consume ----

  private static void consume(Map<String, String> flags) throws IOException {
    String topic = BenchSupport.required(flags, "topic");
    long expect = Long.parseLong(BenchSupport.required(flags, "expect"));
    int reps = Integer.parseInt(flags.getOrDefault("reps", "3"));
    long serverPid = Long.parseLong(flags.getOrDefault("server-pid", "0"));
    double[] times = new double[reps];
    long records = 0;
    long bytes = 0;
    double clientCpu = 0;
    double serverCpu = 0;
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties(flags))) {
      List<TopicPartition> partitions = new ArrayList<>();
      for (PartitionInfo info : consumer.partitionsFor(topic)) {
        partitions.add(new TopicPartition(topic, info.partition()));
      }
      consumer.assign(partitions);
      double serverCpuStart = BenchSupport.otherProcessCpuSeconds(serverPid);
      double cpuStart = BenchSupport.processCpuSeconds();
      for (int rep = 0; rep < reps; ++rep) {
        consumer.seekToBeginning(partitions);
        records = 0;
        bytes = 0;
        long start = System.nanoTime();
        long deadline = start + TimeUnit.MINUTES.toNanos(10);
        while (records < expect) {
          if (System.nanoTime() > deadline) {
            BenchSupport.fail("consume: " + records + " of " + expect);
          }
          for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(100))) {
            ++records;
            bytes += record.value().length;
          }
        }
        times[rep] = (System.nanoTime() - start) / 1e9;
      }
      clientCpu = (BenchSupport.processCpuSeconds() - cpuStart) / reps;
      serverCpu = (BenchSupport.otherProcessCpuSeconds(serverPid) - serverCpuStart) / reps;
    }
    Arrays.sort(times);
    new BenchSupport.JsonLine()
        .add("op", "consume")
        .add("best", times[0])
        .add("median", times[reps / 2])
        .add("client_cpu_seconds", clientCpu)
        .add("server_cpu_seconds", serverCpu)
        .add("reps", reps)
        .add("records", records)
        .add("bytes", bytes)
        .print();
  }
}
