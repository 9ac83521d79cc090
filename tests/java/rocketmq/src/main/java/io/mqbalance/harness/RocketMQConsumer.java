package io.mqbalance.harness;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByMachineRoom;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * One Apache RocketMQ {@code DefaultMQPushConsumer} as a test process, recording what it does in the
 * JSON-lines format of {@code mqbalance rocketmq-consume} (one checker reads both):
 * {@code start} (m client id, pid, group, strategy, client version), {@code a} assigned / {@code r}
 * revoked (q: "broker/topic/queue" names, seen in the client's process-queue table), {@code p} processed
 * (q, offsets [a, b), n, t0, t1), {@code stop}. Times are {@code System.nanoTime()} seconds, the same
 * CLOCK_MONOTONIC as Python's {@code time.monotonic()} on Linux. SIGTERM shuts the consumer down as an
 * application would (offsets persisted, client unregistered), then writes {@code stop}.
 *
 * <pre>
 * java -cp ... io.mqbalance.harness.RocketMQConsumer --namesrv 127.0.0.1:9876 --group g --topic T \
 *     --client-id 10.0.0.1@java1 --strategy AVG --record out/java1.jsonl [--from first] [--work-ms 5]
 *     [--idcs broker-a,broker-b] [--heartbeat-ms 2000] [--persist-ms 500] [--poll-ns-ms 2000]
 * </pre>
 *
 * The rebalance interval is the client's own system property {@code rocketmq.client.rebalance.waitInterval}.
 * Exit status 2 on bad arguments (one line on stderr).
 */
public final class RocketMQConsumer {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final FileOutputStream out;

  private RocketMQConsumer(String path) throws IOException {
    java.io.File f = new java.io.File(path);
    if (f.getParentFile() != null) {
      f.getParentFile().mkdirs();
    }
    this.out = new FileOutputStream(f, true);
  }

  static double now() {
    return System.nanoTime() / 1e9;
  }

  static String queueName(MessageQueue mq) {
    return mq.getBrokerName() + "/" + mq.getTopic() + "/" + mq.getQueueId();
  }

  /** One record, one write(2): whole lines survive a kill -9. */
  synchronized void write(Map<String, Object> fields) {
    fields.putIfAbsent("t", now());
    try {
      out.write((JSON.writeValueAsString(fields) + "\n").getBytes(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new IllegalStateException("cannot write the record file: " + e, e);
    }
  }

  static Map<String, Object> rec(String kind, Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("e", kind);
    for (int i = 0; i + 1 < kv.length; i += 2) {
      m.put((String) kv[i], kv[i + 1]);
    }
    return m;
  }

  static final class UsageError extends Exception {
    UsageError(String message) {
      super(message);
    }
  }

  static AllocateMessageQueueStrategy strategy(String name, String idcs) throws UsageError {
    switch (name) {
      case "AVG":
        return new AllocateMessageQueueAveragely();
      case "AVG_BY_CIRCLE":
        return new AllocateMessageQueueAveragelyByCircle();
      case "CONSISTENT_HASH":
        return new AllocateMessageQueueConsistentHash();
      case "MACHINE_ROOM":
        if (idcs == null) {
          throw new UsageError("MACHINE_ROOM needs --idcs ROOM[,ROOM...]");
        }
        AllocateMessageQueueByMachineRoom s = new AllocateMessageQueueByMachineRoom();
        s.setConsumeridcs(new HashSet<>(Arrays.asList(idcs.split(","))));
        return s;
      default:
        throw new UsageError(
            "unknown strategy " + name + "; known: AVG, AVG_BY_CIRCLE, CONSISTENT_HASH, MACHINE_ROOM");
    }
  }

  static Map<String, String> parse(String[] args) throws UsageError {
    Set<String> known =
        new HashSet<>(
            Arrays.asList(
                "--namesrv", "--group", "--topic", "--client-id", "--strategy", "--record", "--from",
                "--work-ms", "--idcs", "--heartbeat-ms", "--persist-ms", "--poll-ns-ms"));
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i < args.length; i += 2) {
      if (!known.contains(args[i])) {
        throw new UsageError("unknown option " + args[i]);
      }
      if (i + 1 >= args.length) {
        throw new UsageError(args[i] + " needs a value");
      }
      opts.put(args[i], args[i + 1]);
    }
    for (String required : new String[] {"--namesrv", "--group", "--topic", "--client-id", "--record"}) {
      if (!opts.containsKey(required)) {
        throw new UsageError(required + " is required");
      }
    }
    if (!opts.get("--client-id").contains("@")) {
      throw new UsageError("--client-id must be IP@INSTANCE (the Java client id is clientIP@instanceName)");
    }
    return opts;
  }

  static int intOpt(Map<String, String> opts, String name, int dflt) throws UsageError {
    String v = opts.get(name);
    if (v == null) {
      return dflt;
    }
    try {
      int n = Integer.parseInt(v);
      if (n < 0) {
        throw new NumberFormatException();
      }
      return n;
    } catch (NumberFormatException e) {
      throw new UsageError(name + " must be a non-negative integer, got " + v);
    }
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> opts;
    AllocateMessageQueueStrategy strategy;
    int workMs, heartbeatMs, persistMs, pollMs;
    try {
      opts = parse(args);
      strategy = strategy(opts.getOrDefault("--strategy", "AVG"), opts.get("--idcs"));
      workMs = intOpt(opts, "--work-ms", 0);
      heartbeatMs = intOpt(opts, "--heartbeat-ms", 30_000);
      persistMs = intOpt(opts, "--persist-ms", 5_000);
      pollMs = intOpt(opts, "--poll-ns-ms", 30_000);
      String from = opts.getOrDefault("--from", "last");
      if (!from.equals("first") && !from.equals("last")) {
        throw new UsageError("--from must be first or last, got " + from);
      }
    } catch (UsageError e) {
      System.err.println("RocketMQConsumer: " + e.getMessage());
      System.exit(2);
      return;
    }
    String clientId = opts.get("--client-id");
    int at = clientId.indexOf('@');
    RocketMQConsumer self = new RocketMQConsumer(opts.get("--record"));
    DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(opts.get("--group"));
    consumer.setNamesrvAddr(opts.get("--namesrv"));
    consumer.setClientIP(clientId.substring(0, at));
    consumer.setInstanceName(clientId.substring(at + 1));
    consumer.setAllocateMessageQueueStrategy(strategy);
    consumer.setConsumeFromWhere(
        opts.getOrDefault("--from", "last").equals("first")
            ? ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
            : ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
    consumer.setHeartbeatBrokerInterval(heartbeatMs);
    consumer.setPersistConsumerOffsetInterval(persistMs);
    consumer.setPollNameServerInterval(pollMs);
    consumer.subscribe(opts.get("--topic"), "*");
    AtomicLong processed = new AtomicLong();
    final int work = workMs;
    consumer.registerMessageListener(
        (MessageListenerConcurrently)
            (msgs, context) -> {
              double t0 = now();
              if (work > 0) {
                try {
                  Thread.sleep(work);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                  return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
              }
              long lo = Long.MAX_VALUE, hi = Long.MIN_VALUE;
              for (MessageExt m : msgs) {
                lo = Math.min(lo, m.getQueueOffset());
                hi = Math.max(hi, m.getQueueOffset());
              }
              self.write(
                  rec("p", "q", queueName(context.getMessageQueue()), "a", lo, "b", hi + 1, "n", msgs.size(),
                      "t0", t0, "t1", now()));
              processed.addAndGet(msgs.size());
              return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
    CountDownLatch stopped = new CountDownLatch(1);
    Thread watcher =
        new Thread(
            () -> {
              Set<String> held = new TreeSet<>();
              Map<MessageQueue, ?> table =
                  consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable();
              while (stopped.getCount() > 0) {
                Map<String, MessageQueue> now = new HashMap<>();
                for (MessageQueue mq : table.keySet()) {
                  now.put(queueName(mq), mq);
                }
                List<String> gone = new ArrayList<>();
                for (String q : held) {
                  if (!now.containsKey(q)) {
                    gone.add(q);
                  }
                }
                List<String> added = new ArrayList<>(new TreeSet<>(now.keySet()));
                added.removeAll(held);
                if (!gone.isEmpty()) {
                  held.removeAll(gone);
                  self.write(rec("r", "q", gone));
                }
                if (!added.isEmpty()) {
                  List<Long> offsets = new ArrayList<>();
                  for (String q : added) {
                    offsets.add(
                        consumer
                            .getDefaultMQPushConsumerImpl()
                            .getOffsetStore()
                            .readOffset(now.get(q), ReadOffsetType.READ_FROM_MEMORY));
                  }
                  held.addAll(added);
                  self.write(rec("a", "q", added, "o", offsets));
                }
                try {
                  Thread.sleep(20);
                } catch (InterruptedException e) {
                  return;
                }
              }
            },
            "mqbalance-ownership");
    watcher.setDaemon(true);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  consumer.shutdown(); // persists the offsets and unregisters from the brokers
                  stopped.countDown();
                  try {
                    watcher.join(1000);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                  Map<String, Object> stats = new LinkedHashMap<>();
                  stats.put("processed", processed.get());
                  self.write(rec("stop", "m", clientId, "stats", stats));
                },
                "mqbalance-shutdown"));
    consumer.start();
    self.write(
        rec("start", "m", consumer.buildMQClientId(), "pid", ProcessHandle.current().pid(), "group",
            opts.get("--group"), "strategy", opts.getOrDefault("--strategy", "AVG"), "java",
            MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION)));
    watcher.start();
    Thread.currentThread().join(); // until SIGTERM (the shutdown hook) or kill -9
  }
}
