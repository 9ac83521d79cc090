package io.mqbalance.harness.kafka;

import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

/**
 * One Java {@link KafkaConsumer} in a consumer group, recording what it was given and what it
 * processed in the record layout of {@code mqbalance kafka-consume} (see {@code mqbalance.kafka.member}),
 * so one checker reads both kinds of member. Runs until SIGTERM, then leaves the group (revoke,
 * commit, LeaveGroup) and exits 0.
 *
 * <pre>
 * KafkaMember --bootstrap 127.0.0.1:9092 --group g --client-id j1 --topic t [--topic u]
 *             [--protocol classic --assignor range|roundrobin|sticky|cooperative-sticky|everyone]
 *             [--protocol consumer --remote-assignor uniform|range]
 *             [--instance-id ID] --record FILE
 *             [--session-timeout-ms N --heartbeat-interval-ms N --max-poll-interval-ms N]
 *             [--metadata-max-age-ms N] [--command-config FILE]
 *             [--work-ms N] [--max-poll-records N]
 * </pre>
 *
 * {@code everyone} is {@link EveryoneAssignor}, deliberately wrong (for the audit's tests). A long
 * {@code --metadata-max-age-ms} keeps the member from seeing new partitions for that long.
 * {@code --command-config} is a client properties file (security settings, as Kafka's own tools take
 * it), loaded before the options above. {@code --work-ms N}: a slow consumer whose work on a polled
 * batch takes N ms — it handles at most one batch that returned records every N ms (the poll and
 * commit overlapping the wait), so with {@code --max-poll-records R} it consumes a steady
 * {@code R * 1000 / N} records a second while it has a backlog, however loaded the machine is (as long
 * as a poll and a commit take less than N ms).
 *
 * <p>Records: {@code start}, {@code g} (classic: each generation completed, from the assignor; consumer
 * protocol: each assignment change, {@code gen} the member epoch), {@code L} (classic leader),
 * {@code a}/{@code r}/{@code lost}, {@code p} processed, {@code c} committed, {@code err},
 * {@code leave}, {@code stop}.
 */
public final class KafkaMember {
    private final Map<String, List<String>> args;
    private final RecordFile records;
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final boolean classic;
    private final Map<TopicPartition, Long> pending = new HashMap<>();
    private final long workMs;
    private long nextBatchNanos = System.nanoTime();

    private KafkaMember(Map<String, List<String>> args) {
        this.args = args;
        this.records = new RecordFile(Path.of(one("record", null)));
        String protocol = one("protocol", "classic");
        if (!protocol.equals("classic") && !protocol.equals("consumer")) {
            throw new IllegalArgumentException("--protocol must be classic or consumer, got " + protocol);
        }
        this.classic = protocol.equals("classic");
        this.workMs = Long.parseLong(one("work-ms", "0"));
        if (workMs < 0) {
            throw new IllegalArgumentException("--work-ms must be >= 0, got " + workMs);
        }
        Properties p = new Properties();
        if (args.containsKey("command-config")) {
            try (Reader in = Files.newBufferedReader(Path.of(one("command-config", null)))) {
                p.load(in);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, one("bootstrap", null));
        p.put(ConsumerConfig.GROUP_ID_CONFIG, one("group", null));
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, one("client-id", null));
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, one("max-poll-interval-ms", "10000"));
        p.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, one("metadata-max-age-ms", "2000"));
        if (args.containsKey("max-poll-records")) {
            p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, one("max-poll-records", null));
        }
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        if (args.containsKey("instance-id")) {
            p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, one("instance-id", null));
        }
        if (classic) {
            RecordingAssignor.use(one("assignor", "range"), records);
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RecordingAssignor.class.getName());
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, one("session-timeout-ms", "6000"));
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, one("heartbeat-interval-ms", "500"));
        } else {
            // The session timeout and heartbeat interval of this protocol are the broker's.
            p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, one("remote-assignor", "uniform"));
        }
        this.consumer = new KafkaConsumer<>(p);
    }

    private String one(String name, String fallback) {
        List<String> values = args.get(name);
        if (values == null || values.isEmpty()) {
            if (fallback == null) {
                throw new IllegalArgumentException("--" + name + " is required");
            }
            return fallback;
        }
        return values.get(values.size() - 1);
    }

    static Map<String, List<String>> parse(String[] argv) {
        Map<String, List<String>> out = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                throw new IllegalArgumentException("expected --name value pairs, got " + String.join(" ", argv));
            }
            out.computeIfAbsent(argv[i].substring(2), k -> new ArrayList<>()).add(argv[i + 1]);
        }
        return out;
    }

    private void write(String kind, Collection<TopicPartition> partitions) {
        ObjectNode r = records.record(kind);
        RecordingAssignor.keys(r.putArray("q"), partitions);
        records.write(r);
    }

    /** The consumer protocol has no client assignor: its assignment changes are its generations. */
    private void generation() {
        if (!classic) {
            ObjectNode g = records.record("g");
            g.put("gen", consumer.groupMetadata().generationId());
            g.put("mid", consumer.groupMetadata().memberId());
            RecordingAssignor.keys(g.putArray("q"), consumer.assignment());
            records.write(g);
        }
    }

    private void commit() {
        if (pending.isEmpty()) {
            return;
        }
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        pending.forEach((tp, o) -> offsets.put(tp, new OffsetAndMetadata(o)));
        pending.clear();
        try {
            consumer.commitSync(offsets);
        } catch (WakeupException e) {
            throw e;
        } catch (KafkaException e) { // a rebalance under way: the next owner re-reads from the last commit
            ObjectNode r = records.record("err");
            r.put("w", "commit");
            r.put("msg", String.valueOf(e.getMessage()));
            records.write(r);
            return;
        }
        offsets.forEach((tp, o) -> {
            ObjectNode r = records.record("c");
            r.put("q", tp.topic() + "/" + tp.partition());
            r.put("o", o.offset());
            records.write(r);
        });
    }

    /** Wait until this batch's turn: one every {@code workMs}, not catching up after a late one. */
    private void pace() throws InterruptedException {
        long now = System.nanoTime();
        if (nextBatchNanos - now > 0) {
            long wait = nextBatchNanos - now;
            Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
            now = nextBatchNanos;
        }
        nextBatchNanos = now + workMs * 1_000_000;
    }

    private void run(CountDownLatch done) {
        try {
            ObjectNode start = records.record("start");
            start.put("m", one("client-id", null));
            start.put("pid", ProcessHandle.current().pid());
            start.put("group", one("group", null));
            start.put("assignor", classic ? one("assignor", "range") : one("remote-assignor", "uniform"));
            start.put("impl", classic ? "java" : "java-consumer-protocol");
            records.write(start);
            consumer.subscribe(args.get("topic"), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                    commit();
                    write("r", revoked);
                    if (!revoked.isEmpty()) {
                        generation();
                    }
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> assigned) {
                    write("a", assigned);
                    generation();
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> lost) {
                    write("lost", lost);
                }
            });
            try {
                while (true) {
                    ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(100));
                    if (workMs > 0 && !batch.isEmpty()) {
                        pace();
                    }
                    for (TopicPartition tp : batch.partitions()) {
                        double t0 = RecordFile.now();
                        List<ConsumerRecord<byte[], byte[]>> rs = batch.records(tp);
                        long a = rs.get(0).offset();
                        long b = rs.get(rs.size() - 1).offset() + 1;
                        ObjectNode p = records.record("p");
                        p.put("q", tp.topic() + "/" + tp.partition());
                        p.put("a", a);
                        p.put("b", b);
                        p.put("n", rs.size());
                        p.put("t0", t0);
                        p.put("t1", RecordFile.now());
                        records.write(p);
                        pending.put(tp, b);
                    }
                    commit();
                }
            } catch (WakeupException stopping) {
                records.write(records.record("leave"));
                consumer.close(); // revokes (committing what was processed) and leaves the group
            }
            records.write(records.record("stop"));
            records.close();
        } catch (Exception e) {
            ObjectNode r = records.record("err");
            r.put("w", "run");
            r.put("msg", e.toString());
            records.write(r);
            e.printStackTrace();
            Runtime.getRuntime().halt(1);
        } finally {
            done.countDown();
        }
    }

    public static void main(String[] argv) throws Exception {
        KafkaMember member = new KafkaMember(parse(argv));
        if (member.args.get("topic") == null) {
            throw new IllegalArgumentException("--topic is required (repeatable)");
        }
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            member.consumer.wakeup();
            try {
                done.await();
            } catch (InterruptedException ignored) {
                Thread.currentThread().interrupt();
            }
            Runtime.getRuntime().halt(0); // left the group cleanly: exit 0, not the JVM's 143 for SIGTERM
        }));
        member.run(done);
    }

}
