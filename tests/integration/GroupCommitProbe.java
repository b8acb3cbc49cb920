// Kafka's Java consumer in the group scenario of test_kafka_groups.py: three consumers of one
// group settle on the empty topic (each owns partitions), then `total` records are produced
// (partition i % partitions), then the consumers, polled in turn on one thread, commit every
// record synchronously; the third closes (LeaveGroup) once `leaveAfter` records were seen.
// Settling first keeps the group's start out of the picture: oxbowd has no initial rebalance
// delay (docs/kafka.md), so a member alone at first would hold every record. Prints one line:
//   seen=<records> distinct=<distinct records> failures=<each failed commit: refused-by-client
//   when the consumer refused it itself while rejoining, else the exception's class>
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class GroupCommitProbe {
  public static void main(String[] args) {
    String bootstrap = args[0], topic = args[1], group = args[2], assignor = args[3];
    int total = Integer.parseInt(args[4]), leaveAfter = Integer.parseInt(args[5]);
    int partitions = Integer.parseInt(args[6]);
    List<KafkaConsumer<byte[], byte[]>> members = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Properties p = new Properties();
      p.put("bootstrap.servers", bootstrap);
      p.put("group.id", group);
      p.put("enable.auto.commit", "false");
      p.put("auto.offset.reset", "earliest");
      p.put("session.timeout.ms", "6000");
      p.put("heartbeat.interval.ms", "500");
      p.put("partition.assignment.strategy", assignor);
      p.put("key.deserializer", ByteArrayDeserializer.class.getName());
      p.put("value.deserializer", ByteArrayDeserializer.class.getName());
      KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p);
      consumer.subscribe(List.of(topic));
      members.add(consumer);
    }
    long deadline = System.currentTimeMillis() + 120_000;
    while (!members.stream().allMatch(c -> !c.assignment().isEmpty())) {
      if (System.currentTimeMillis() > deadline) throw new IllegalStateException("never settled");
      for (KafkaConsumer<byte[], byte[]> consumer : members) consumer.poll(Duration.ofMillis(50));
    }
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.serializer", ByteArraySerializer.class.getName());
    p.put("value.serializer", ByteArraySerializer.class.getName());
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      for (int i = 0; i < total; i++) {
        producer.send(new ProducerRecord<>(topic, i % partitions, null, ("r" + i).getBytes()));
      }
    }
    List<String> seen = new ArrayList<>();
    List<String> failures = new ArrayList<>();
    while (seen.size() < total && System.currentTimeMillis() < deadline) {
      for (KafkaConsumer<byte[], byte[]> consumer : new ArrayList<>(members)) {
        if (!members.contains(consumer)) continue;  // closed while the others were polled
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(50))) {
          seen.add(new String(r.value()));
          try {
            consumer.commitSync(Map.of(new TopicPartition(r.topic(), r.partition()),
                                       new OffsetAndMetadata(r.offset() + 1)));
          } catch (RuntimeException e) {
            // The consumer refuses on its own while it rejoins; anything else is the broker's.
            final boolean refusedByClient = e.getMessage() != null &&
                e.getMessage().startsWith("Offset commit cannot be completed since the consumer "
                                          + "is undergoing a rebalance");
            failures.add(refusedByClient ? "refused-by-client" : e.getClass().getSimpleName());
          }
          if (seen.size() == leaveAfter && members.size() == 3) {
            KafkaConsumer<byte[], byte[]> leaving = members.remove(2);
            leaving.close();
            if (leaving == consumer) break;  // the rest of its records go to the others
          }
        }
      }
    }
    for (KafkaConsumer<byte[], byte[]> consumer : members) consumer.close();
    System.out.println("seen=" + seen.size() + " distinct=" + new HashSet<>(seen).size() +
                       " failures=" + failures);
  }
}
