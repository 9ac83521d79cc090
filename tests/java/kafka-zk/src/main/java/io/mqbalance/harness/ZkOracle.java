package io.mqbalance.harness;

import static io.mqbalance.harness.JsonLines.JSON;
import static io.mqbalance.harness.JsonLines.NODES;
import static io.mqbalance.harness.JsonLines.field;
import static io.mqbalance.harness.JsonLines.text;

import io.mqbalance.harness.JsonLines.BadRequest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import kafka.common.TopicAndPartition;
import kafka.consumer.AssignmentContext;
import kafka.consumer.ConsumerThreadId;
import kafka.consumer.PartitionAssignor;
import kafka.consumer.RangeAssignor;
import kafka.consumer.RoundRobinAssignor;
import kafka.utils.ZkUtils;
import org.apache.zookeeper.server.NIOServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;

/**
 * The ZooKeeper-era consumer's assignors (Kafka 0.10.2.2, {@code kafka.consumer.RangeAssignor} and
 * {@code RoundRobinAssignor}), one JSON line in, one JSON line out, against a real ZooKeeper server
 * this process runs on a loopback port.
 *
 * <p>A request has the shape of a line of tests/vectors/kafka/zk_*.jsonl without its answer, plus
 * {@code "op": "zk_assign"}: {@code assignor} (zk-range, zk-roundrobin), {@code group},
 * {@code topics} {name: partition count} (registered under /brokers/topics), {@code consumers}
 * [{consumer_id, subscription {topic: stream count}}] (registered under /consumers/group/ids). Each
 * consumer runs the assignor in its own {@code AssignmentContext} and keeps its own slice, as in the
 * real rebalance; the answer is {@code expected_owners} {topic: {partition: thread id}}, or
 * {@code error} + {@code exception}. {@code "version"} answers the Kafka version. A request the
 * harness cannot read gets {@code {"id", "badRequest": why}}; the process serves until stdin closes.
 */
public final class ZkOracle {

    private final ZkUtils zk;

    ZkOracle(ZkUtils zk) {
        this.zk = zk;
    }

    public static void main(String[] args) throws Exception {
        System.setOut(System.err);
        System.setProperty("zookeeper.forceSync", "no"); // a scratch server: no fsync per write
        File data = Files.createTempDirectory("mqbalance-zk-oracle").toFile();
        data.deleteOnExit();
        ZooKeeperServer server = new ZooKeeperServer(data, data, 2000);
        NIOServerCnxnFactory factory = new NIOServerCnxnFactory();
        factory.configure(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
        factory.startup(server);
        ZkUtils zk = ZkUtils.apply("127.0.0.1:" + factory.getLocalPort(), 30000, 30000, false);
        ZkOracle oracle = new ZkOracle(zk);
        try {
            JsonLines.serve(oracle::handle);
        } finally {
            zk.close();
            factory.shutdown();
            deleteTree(data);
        }
    }

    private static void deleteTree(File f) {
        File[] children = f.listFiles();
        if (children != null) {
            for (File c : children) {
                deleteTree(c);
            }
        }
        f.delete();
    }

    void handle(String op, JsonNode req, ObjectNode reply) {
        if (op.equals("version")) {
            reply.put("version", kafka.common.Config.class.getPackage().getImplementationVersion() == null
                    ? org.apache.kafka.common.utils.AppInfoParser.getVersion()
                    : kafka.common.Config.class.getPackage().getImplementationVersion());
        } else if (op.equals("zk_assign")) {
            assign(req, reply);
        } else {
            throw new BadRequest("unknown op '" + op + "' (zk_assign, version)");
        }
    }

    private static JsonNode counts(JsonNode obj, String name) {
        JsonNode v = field(obj, name);
        if (!v.isObject()) {
            throw new BadRequest("field '" + name + "' must be an object {topic: count}");
        }
        for (JsonNode n : v) {
            if (!n.isIntegralNumber() || !n.canConvertToInt() || n.asInt() < 0) {
                throw new BadRequest("field '" + name + "': counts are non-negative ints");
            }
        }
        return v;
    }

    private void write(String path, JsonNode data) {
        try {
            zk.createPersistentPath(path, JSON.writeValueAsString(data), zk.createPersistentPath$default$3());
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private void assign(JsonNode req, ObjectNode reply) {
        String name = text(req, "assignor");
        String group = text(req, "group");
        JsonNode topics = counts(req, "topics");
        JsonNode consumers = field(req, "consumers");
        if (!consumers.isArray()) {
            throw new BadRequest("consumers must be a list of {consumer_id, subscription}");
        }
        for (JsonNode c : consumers) {
            text(c, "consumer_id");
            counts(c, "subscription");
        }
        PartitionAssignor assignor;
        if (name.equals("zk-range")) {
            assignor = new RangeAssignor();
        } else if (name.equals("zk-roundrobin")) {
            assignor = new RoundRobinAssignor();
        } else {
            throw new BadRequest("unknown assignor '" + name + "' (zk-range, zk-roundrobin)");
        }
        // A fresh group and topic registry for each request, as the case describes them.
        zk.deletePathRecursive("/consumers/" + group);
        zk.deletePathRecursive("/brokers/topics");
        try {
            register(group, topics, consumers);
        } catch (IllegalArgumentException e) {
            // ZooKeeper itself refuses the path (a surrogate or U+E000..U+F8FF character in an id, say)
            reply.put("error", e.getMessage());
            reply.put("exception", "ZooKeeper refused the registration: " + e.getClass().getSimpleName());
            return;
        }
        Map<String, Map<Integer, String>> owners = new TreeMap<>();
        try {
            for (JsonNode c : consumers) {
                String consumerId = c.get("consumer_id").asText();
                AssignmentContext ctx = new AssignmentContext(group, consumerId, false, zk);
                scala.collection.mutable.Map<TopicAndPartition, ConsumerThreadId> mine = assignor.assign(ctx).get(consumerId);
                if (mine == null) {
                    continue;
                }
                for (Map.Entry<TopicAndPartition, ConsumerThreadId> e
                        : scala.collection.JavaConverters.mapAsJavaMapConverter(mine).asJava().entrySet()) {
                    owners.computeIfAbsent(e.getKey().topic(), k -> new TreeMap<>())
                            .put(e.getKey().partition(), e.getValue().toString());
                }
            }
        } catch (RuntimeException e) {
            reply.put("error", e.getMessage());
            reply.put("exception", e.getClass().getSimpleName());
            return;
        }
        ObjectNode out = reply.putObject("expected_owners");
        owners.forEach((t, ps) -> {
            ObjectNode per = out.putObject(t);
            ps.forEach((p, thread) -> per.put(Integer.toString(p), thread));
        });
    }

    /** The topics under /brokers/topics and the consumers' registrations under /consumers/group/ids. */
    private void register(String group, JsonNode topics, JsonNode consumers) {
        for (Iterator<Map.Entry<String, JsonNode>> it = topics.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> t = it.next();
            ObjectNode partitions = NODES.objectNode();
            for (int p = 0; p < t.getValue().asInt(); p++) {
                partitions.putArray(Integer.toString(p)).add(0);
            }
            ObjectNode node = NODES.objectNode();
            node.put("version", 1);
            node.set("partitions", partitions);
            write("/brokers/topics/" + t.getKey(), node);
        }
        for (JsonNode c : consumers) {
            ObjectNode node = NODES.objectNode();
            node.put("version", 1);
            node.set("subscription", c.get("subscription"));
            node.put("pattern", "static");
            node.put("timestamp", "1480000000000");
            write("/consumers/" + group + "/ids/" + c.get("consumer_id").asText(), node);
        }
    }
}
