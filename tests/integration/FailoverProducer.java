// Kafka's Java producer in the leader-kill test of test_cluster.py: an idempotent producer
// (acks=all, retries until delivery.timeout.ms) sending "<prefix><n>" to partition 0 of a topic
// until stdin closes, then flushing. Prints one line per acknowledged record, "ack <value>
// <offset>", and per failed one, "fail <value> <exception class>"; no user code reacts to a
// failover, the client alone finds the new leader.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class FailoverProducer {
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0], topic = args[1], prefix = args[2];
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("acks", "all");
    p.put("enable.idempotence", "true");
    p.put("linger.ms", "5");
    p.put("delivery.timeout.ms", "120000");
    p.put("request.timeout.ms", "15000");
    p.put("key.serializer", ByteArraySerializer.class.getName());
    p.put("value.serializer", ByteArraySerializer.class.getName());
    AtomicBoolean stop = new AtomicBoolean(false);
    Thread stdin = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
        while (in.readLine() != null) {}
      } catch (Exception e) {
        // closed: stop as well
      }
      stop.set(true);
    });
    stdin.setDaemon(true);
    stdin.start();
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      for (long n = 0; !stop.get(); n++) {
        final String value = prefix + n;
        producer.send(new ProducerRecord<>(topic, 0, null, value.getBytes()), (meta, error) -> {
          synchronized (System.out) {
            if (error == null) {
              System.out.println("ack " + value + " " + meta.offset());
            } else {
              System.out.println("fail " + value + " " + error.getClass().getSimpleName());
            }
            System.out.flush();
          }
        });
        Thread.sleep(2);
      }
      producer.flush();
    }
  }
}
