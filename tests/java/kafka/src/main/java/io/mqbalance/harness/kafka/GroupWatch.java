package io.mqbalance.harness.kafka;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberAssignment;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What the broker says of one consumer group, as JSON lines, through the Java {@link Admin} client
 * (ConsumerGroupDescribe for groups of the consumer protocol, DescribeGroups for classic ones): every
 * {@code --interval-ms} one line with the group's state, type, epochs, and each member's id, instance
 * id, client id, member epoch, current and target assignment, plus the ids and partition counts of
 * the topics the members hold (and of each {@code --topic}). Runs until stopped (SIGTERM).
 *
 * <pre>
 * GroupWatch --bootstrap 127.0.0.1:9092 --group g --out FILE [--interval-ms 200]
 * </pre>
 */
public final class GroupWatch {
    private GroupWatch() {
    }

    static void assignment(ObjectNode into, String field, MemberAssignment a, Map<String, Boolean> topics) {
        TreeMap<String, java.util.TreeSet<Integer>> byTopic = new TreeMap<>();
        for (TopicPartition tp : a.topicPartitions()) {
            byTopic.computeIfAbsent(tp.topic(), t -> new java.util.TreeSet<>()).add(tp.partition());
            topics.put(tp.topic(), true);
        }
        ObjectNode node = into.putObject(field);
        byTopic.forEach((t, ps) -> {
            ArrayNode list = node.putArray(t);
            ps.forEach(list::add);
        });
    }

    public static void main(String[] argv) throws Exception {
        Map<String, List<String>> args = KafkaMember.parse(argv);
        String group = args.get("group").get(0);
        long interval = Long.parseLong(args.getOrDefault("interval-ms", List.of("200")).get(0));
        Map<String, Object> config = new HashMap<>();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args.get("bootstrap").get(0));
        config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        try (Admin admin = Admin.create(config); RecordFile out = new RecordFile(Path.of(args.get("out").get(0)))) {
            while (!Thread.currentThread().isInterrupted()) {
                ObjectNode line = out.record("describe");
                try {
                    ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
                    line.put("state", d.groupState().toString());
                    line.put("type", d.type().toString());
                    line.put("assignor", d.partitionAssignor());
                    line.put("group_epoch", d.groupEpoch().orElse(-1));
                    line.put("target_epoch", d.targetAssignmentEpoch().orElse(-1));
                    Map<String, Boolean> topics = new TreeMap<>();
                    ArrayNode members = line.putArray("members");
                    for (MemberDescription m : d.members()) {
                        ObjectNode node = members.addObject();
                        node.put("id", m.consumerId());
                        node.put("iid", m.groupInstanceId().orElse(null));
                        node.put("client_id", m.clientId());
                        node.put("host", m.host());
                        node.put("epoch", m.memberEpoch().orElse(-1));
                        assignment(node, "assignment", m.assignment(), topics);
                        if (m.targetAssignment().isPresent()) {
                            assignment(node, "target", m.targetAssignment().get(), topics);
                        }
                    }
                    ObjectNode topicNode = line.putObject("topics");
                    if (args.containsKey("topic")) {
                        args.get("topic").forEach(t -> topics.put(t, true));
                    }
                    if (!topics.isEmpty()) {
                        Map<String, TopicDescription> described =
                            admin.describeTopics(topics.keySet()).allTopicNames().get();
                        described.forEach((name, td) -> {
                            ObjectNode t = topicNode.putObject(name);
                            t.put("id", td.topicId().toString());
                            t.put("partitions", td.partitions().size());
                        });
                    }
                } catch (java.util.concurrent.ExecutionException e) {
                    line.put("error", String.valueOf(e.getCause()));
                }
                out.write(line);
                Thread.sleep(interval);
            }
        } catch (InterruptedException stopping) {
            // SIGTERM
        }
    }
}
