// Kafka Streams' word count against a Kafka listener: lines in, a KTable of counts per word
// (a repartition topic and a compacted changelog topic, both created by Streams), counts out.
// Exits 0 once the output topic's latest count of every word equals the expected one, 1 after
// 120 s. Single-file source, run by tests/integration/test_kafka_streams.py:
//   java -cp <kafka-streams classpath> WordCount.java BOOTSTRAP INPUT OUTPUT APP_ID STATE_DIR
//        word=count,word=count,...
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Produced;

public class WordCount {
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0], input = args[1], output = args[2];
    Map<String, Long> expected = new HashMap<>();
    for (String pair : args[5].split(",")) {
      String[] kv = pair.split("=");
      expected.put(kv[0], Long.parseLong(kv[1]));
    }
    Properties config = new Properties();
    config.put(StreamsConfig.APPLICATION_ID_CONFIG, args[3]);
    config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    config.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
    config.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    config.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    config.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    config.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    config.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    config.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[6]);

    StreamsBuilder builder = new StreamsBuilder();
    builder.<String, String>stream(input)
        .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\s+")))
        .groupBy((key, word) -> word)
        .count()
        .toStream()
        .to(output, Produced.with(Serdes.String(), Serdes.Long()));
    KafkaStreams streams = new KafkaStreams(builder.build(), config);
    streams.start();

    Properties consumerConfig = new Properties();
    consumerConfig.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    consumerConfig.put(ConsumerConfig.GROUP_ID_CONFIG, args[3] + "-check");
    consumerConfig.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    consumerConfig.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    Map<String, Long> seen = new HashMap<>();
    long deadline = System.currentTimeMillis() + 120_000;
    try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(
             consumerConfig, new StringDeserializer(), new LongDeserializer())) {
      consumer.subscribe(List.of(output));
      while (!seen.equals(expected) && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, Long> r : consumer.poll(Duration.ofMillis(200))) {
          seen.put(r.key(), r.value());
        }
      }
    }
    KafkaStreams.State state = streams.state();
    streams.close(Duration.ofSeconds(30));
    System.out.println("state=" + state + " seen=" + seen);
    System.exit(seen.equals(expected) ? 0 : 1);
  }
}
