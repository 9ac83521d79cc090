package io.mqbalance.harness;

import static io.mqbalance.harness.JsonLines.JSON;
import static io.mqbalance.harness.JsonLines.NODES;
import static io.mqbalance.harness.JsonLines.field;
import static io.mqbalance.harness.JsonLines.text;

import io.mqbalance.harness.JsonLines.BadRequest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

/**
 * Java's answer for Kafka assignment, one JSON line in, one JSON line out.
 *
 * <p>Requests have the shape of a line of tests/vectors/kafka/*.jsonl without its answer, plus
 * {@code "op"}: {@code "assign"} — the client-side assignors ({@code assignor}: range, roundrobin,
 * sticky, cooperative-sticky; {@code topics} {name: count}; {@code members} [{member_id,
 * group_instance_id, topics, owned, generation}]) through the public {@code ConsumerPartitionAssignor}
 * API, as the consumer leader calls it; {@code "server_assign"} — the broker-side (KIP-848)
 * assignors ({@code assignor}: uniform, range; {@code topics} {topic id: count}; {@code members}
 * [{member_id, instance_id, rack, subscribed_topic_ids, current_assignment}]) as the coordinator
 * calls them; {@code "version"}. Answers: {@code expected} {member: {topic: [partitions ascending]}}
 * (every member), or {@code error} (the exception's message) with {@code exception} (its simple class
 * name). A request the harness cannot read gets {@code {"id", "badRequest": why}}; the process keeps
 * serving until stdin closes.
 *
 * <p>Example: {@code {"op":"assign","id":1,"assignor":"range","topics":{"t":3},
 * "members":[{"member_id":"a","topics":["t"]}]}} → {@code {"id":1,"expected":{"a":{"t":[0,1,2]}}}}.
 */
public final class KafkaOracle {

    public static void main(String[] args) throws Exception {
        JsonLines.serve((op, req, reply) -> {
            switch (op) {
                case "assign":
                    clientAssign(req, reply);
                    break;
                case "server_assign":
                    serverAssign(req, reply);
                    break;
                case "version":
                    reply.put("version", org.apache.kafka.common.utils.internals.AppInfoParser.getVersion());
                    break;
                default:
                    throw new BadRequest("unknown op '" + op + "' (assign, server_assign, version)");
            }
        });
    }

    private static String optionalText(JsonNode obj, String name) {
        JsonNode v = obj.get(name);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isTextual()) {
            throw new BadRequest("field '" + name + "' must be a string or null");
        }
        return v.asText();
    }

    private static int integer(JsonNode v, String what) {
        if (v == null || !v.canConvertToInt() || !v.isIntegralNumber()) {
            throw new BadRequest(what + " must be a Java int");
        }
        return v.asInt();
    }

    private static List<String> strings(JsonNode v, String what) {
        if (v == null || !v.isArray()) {
            throw new BadRequest(what + " must be a list of strings");
        }
        List<String> out = new ArrayList<>();
        for (JsonNode s : v) {
            if (!s.isTextual()) {
                throw new BadRequest(what + " must be a list of strings");
            }
            out.add(s.asText());
        }
        return out;
    }

    private static Map<String, Integer> topics(JsonNode req) {
        JsonNode t = field(req, "topics");
        if (!t.isObject()) {
            throw new BadRequest("topics must be an object {topic: partition count}");
        }
        Map<String, Integer> out = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = t.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            out.put(e.getKey(), integer(e.getValue(), "topics." + e.getKey()));
        }
        return out;
    }

    private static ArrayNode members(JsonNode req) {
        JsonNode m = field(req, "members");
        if (!m.isArray()) {
            throw new BadRequest("members must be a list");
        }
        for (JsonNode member : m) {
            if (!member.isObject()) {
                throw new BadRequest("members: each member is an object");
            }
            text(member, "member_id");
        }
        return (ArrayNode) m;
    }

    private static void error(ObjectNode reply, Throwable e) {
        reply.put("error", e.getMessage());
        reply.put("exception", e.getClass().getSimpleName());
    }

    // --- the client-side assignors (classic protocol) ---

    private static ConsumerPartitionAssignor clientAssignor(String name) {
        switch (name) {
            case "range":
                return new RangeAssignor();
            case "roundrobin":
                return new RoundRobinAssignor();
            case "sticky":
                return new StickyAssignor();
            case "cooperative-sticky":
                return new CooperativeStickyAssignor();
            default:
                throw new BadRequest("unknown assignor '" + name + "' (range, roundrobin, sticky, cooperative-sticky)");
        }
    }

    private static List<TopicPartition> owned(JsonNode member) {
        JsonNode o = member.get("owned");
        List<TopicPartition> out = new ArrayList<>();
        if (o == null || o.isNull()) {
            return out;
        }
        if (!o.isObject()) {
            throw new BadRequest("owned must be {topic: [partitions]} or null");
        }
        for (Iterator<Map.Entry<String, JsonNode>> it = o.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (!e.getValue().isArray()) {
                throw new BadRequest("owned." + e.getKey() + " must be a list of partitions");
            }
            for (JsonNode p : e.getValue()) {
                out.add(new TopicPartition(e.getKey(), integer(p, "owned partition")));
            }
        }
        return out;
    }

    private static void clientAssign(JsonNode req, ObjectNode reply) {
        String name = text(req, "assignor");
        ConsumerPartitionAssignor assignor = clientAssignor(name);
        Map<String, Integer> topics = topics(req);
        ArrayNode members = members(req);
        List<PartitionInfo> partitions = new ArrayList<>();
        Node[] none = new Node[0];
        for (Map.Entry<String, Integer> t : topics.entrySet()) {
            for (int p = 0; p < t.getValue(); p++) {
                partitions.add(new PartitionInfo(t.getKey(), p, null, none, none));
            }
        }
        Cluster cluster = new Cluster("mqbalance-oracle", List.of(), partitions, Set.of(), Set.of());
        Map<String, Subscription> subscriptions = new HashMap<>(); // as the consumer leader builds it
        for (JsonNode m : members) {
            String memberId = m.get("member_id").asText();
            List<String> subscribed = strings(field(m, "topics"), "topics");
            String instance = optionalText(m, "group_instance_id");
            JsonNode gen = m.get("generation");
            int generation = gen == null || gen.isNull() ? -1 : integer(gen, "generation");
            boolean hasOwned = m.get("owned") != null && !m.get("owned").isNull();
            Subscription s;
            if (name.equals("sticky")) {
                // Eager sticky reads owned partitions and generation from its userData only: encode
                // them the way the member's own StickyAssignor does after its last assignment.
                ByteBuffer userData = null;
                if (hasOwned) {
                    StickyAssignor own = new StickyAssignor();
                    own.onAssignment(new Assignment(owned(m)),
                            new ConsumerGroupMetadata("g", generation, memberId, Optional.ofNullable(instance)));
                    userData = own.subscriptionUserData(new HashSet<>(subscribed));
                }
                s = new Subscription(subscribed, userData, List.of(), -1, Optional.empty());
            } else {
                s = new Subscription(subscribed, null, owned(m), generation, Optional.empty());
            }
            s.setGroupInstanceId(Optional.ofNullable(instance));
            if (subscriptions.put(memberId, s) != null) {
                throw new BadRequest("member id '" + memberId + "' is listed twice");
            }
        }
        Map<String, Assignment> result;
        try {
            result = assignor.assign(cluster, new GroupSubscription(subscriptions)).groupAssignment();
        } catch (RuntimeException e) {
            error(reply, e);
            return;
        }
        ObjectNode expected = reply.putObject("expected");
        for (JsonNode m : members) {
            String memberId = m.get("member_id").asText();
            Map<String, Set<Integer>> per = new TreeMap<>();
            Assignment a = result.get(memberId);
            if (a != null) {
                for (TopicPartition tp : a.partitions()) {
                    per.computeIfAbsent(tp.topic(), k -> new TreeSet<>()).add(tp.partition());
                }
            }
            ObjectNode out = expected.putObject(memberId);
            per.forEach((t, ps) -> {
                ArrayNode arr = out.putArray(t);
                ps.forEach(arr::add);
            });
        }
    }

    // --- the broker-side assignors (KIP-848 consumer protocol) ---

    private static ConsumerGroupPartitionAssignor serverAssignor(String name) {
        switch (name) {
            case "uniform":
                return new UniformAssignor();
            case "range":
                return new org.apache.kafka.coordinator.group.assignor.RangeAssignor();
            default:
                throw new BadRequest("unknown server assignor '" + name + "' (uniform, range)");
        }
    }

    private static Uuid topicId(String s) {
        try {
            return Uuid.fromString(s);
        } catch (IllegalArgumentException e) {
            throw new BadRequest("not a topic id: '" + s + "' (" + e.getMessage() + ")");
        }
    }

    /** The coordinator's metadata as the assignor sees it: partition counts by topic id, no racks. */
    public static final class Metadata implements SubscribedTopicDescriber {
        private final Map<Uuid, Integer> counts;

        public Metadata(Map<Uuid, Integer> counts) {
            this.counts = counts;
        }

        @Override
        public int numPartitions(Uuid topicId) {
            return counts.getOrDefault(topicId, -1);
        }

        @Override
        public Set<String> racksForPartition(Uuid topicId, int partition) {
            return Set.of();
        }
    }

    private static void serverAssign(JsonNode req, ObjectNode reply) {
        ConsumerGroupPartitionAssignor assignor = serverAssignor(text(req, "assignor"));
        Map<Uuid, Integer> counts = new LinkedHashMap<>();
        topics(req).forEach((t, n) -> counts.put(topicId(t), n));
        ArrayNode members = members(req);
        Map<String, MemberSubscriptionAndAssignmentImpl> specs = new LinkedHashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        Map<Uuid, Integer> subscribers = new HashMap<>();
        for (JsonNode m : members) {
            String memberId = m.get("member_id").asText();
            Set<Uuid> subscribed = new LinkedHashSet<>();
            for (String t : strings(field(m, "subscribed_topic_ids"), "subscribed_topic_ids")) {
                subscribed.add(topicId(t));
            }
            for (Uuid t : subscribed) {
                subscribers.merge(t, 1, Integer::sum);
            }
            Map<Uuid, Set<Integer>> current = new LinkedHashMap<>();
            JsonNode ca = m.get("current_assignment");
            if (ca != null && !ca.isNull()) {
                if (!ca.isArray()) {
                    throw new BadRequest("current_assignment must be [[topic id, [partitions]], ...]");
                }
                for (JsonNode pair : ca) {
                    if (!pair.isArray() || pair.size() != 2 || !pair.get(0).isTextual() || !pair.get(1).isArray()) {
                        throw new BadRequest("current_assignment must be [[topic id, [partitions]], ...]");
                    }
                    Uuid t = topicId(pair.get(0).asText());
                    Set<Integer> ps = new LinkedHashSet<>();
                    for (JsonNode p : pair.get(1)) {
                        int partition = integer(p, "current_assignment partition");
                        ps.add(partition);
                        inverted.computeIfAbsent(t, k -> new HashMap<>()).put(partition, memberId);
                    }
                    current.put(t, Collections.unmodifiableSet(ps));
                }
            }
            MemberSubscriptionAndAssignmentImpl spec = new MemberSubscriptionAndAssignmentImpl(
                    Optional.ofNullable(optionalText(m, "rack")), Optional.ofNullable(optionalText(m, "instance_id")),
                    subscribed, new org.apache.kafka.coordinator.group.modern.Assignment(
                            Collections.unmodifiableMap(current)));
            if (specs.put(memberId, spec) != null) {
                throw new BadRequest("member id '" + memberId + "' is listed twice");
            }
        }
        // The coordinator's rule: homogeneous when every subscribed topic has every member as subscriber.
        SubscriptionType type = SubscriptionType.HOMOGENEOUS;
        for (int n : subscribers.values()) {
            if (n != specs.size()) {
                type = SubscriptionType.HETEROGENEOUS;
            }
        }
        GroupAssignment result;
        try {
            result = assignor.assign(new GroupSpecImpl(specs, type, inverted), new Metadata(counts));
        } catch (RuntimeException e) {
            error(reply, e);
            return;
        }
        ObjectNode expected = reply.putObject("expected");
        for (String memberId : specs.keySet()) {
            MemberAssignment a = result.members().get(memberId);
            Map<String, Set<Integer>> per = new TreeMap<>();
            if (a != null) {
                a.partitions().forEach((t, ps) -> {
                    if (!ps.isEmpty()) {
                        per.put(t.toString(), new TreeSet<>(ps));
                    }
                });
            }
            ObjectNode out = expected.putObject(memberId);
            per.forEach((t, ps) -> {
                ArrayNode arr = out.putArray(t);
                ps.forEach(arr::add);
            });
        }
    }
}
