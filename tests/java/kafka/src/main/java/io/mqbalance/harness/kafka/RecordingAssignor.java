package io.mqbalance.harness.kafka;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.TopicPartition;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;

/**
 * Java's own client assignor, unchanged, behind a wrapper that records what it computed as leader
 * ({@code L}: the subscriptions it received, partition counts, its output) and each generation the
 * member completed ({@code g}), in the layout of mqbalance's kafka-python member
 * ({@code mqbalance.kafka.member}). The group protocol name is the delegate's, so the broker and the
 * other members see a plain {@code range}, {@code sticky}, ... member.
 *
 * <p>The consumer instantiates the class named in {@code partition.assignment.strategy}; the delegate
 * and the record file are set beforehand through {@link #use} (one consumer per JVM).
 */
public final class RecordingAssignor implements ConsumerPartitionAssignor {
    static final Map<String, Supplier<ConsumerPartitionAssignor>> JAVA_ASSIGNORS = Map.of(
        "range", RangeAssignor::new,
        "roundrobin", RoundRobinAssignor::new,
        "sticky", StickyAssignor::new,
        "cooperative-sticky", CooperativeStickyAssignor::new,
        "everyone", EveryoneAssignor::new);

    private static ConsumerPartitionAssignor nextDelegate;
    private static RecordFile nextRecords;

    private final ConsumerPartitionAssignor delegate;
    private final RecordFile records;
    private ObjectNode pendingLead;

    static void use(String name, RecordFile records) {
        Supplier<ConsumerPartitionAssignor> make = JAVA_ASSIGNORS.get(name);
        if (make == null) {
            throw new IllegalArgumentException(
                "unknown assignor " + name + "; known: " + new TreeSet<>(JAVA_ASSIGNORS.keySet()));
        }
        nextDelegate = make.get();
        nextRecords = records;
    }

    public RecordingAssignor() {
        if (nextDelegate == null) {
            throw new IllegalStateException("RecordingAssignor.use(...) must be called before the consumer is built");
        }
        this.delegate = nextDelegate;
        this.records = nextRecords;
    }

    @Override
    public String name() {
        return delegate.name();
    }

    @Override
    public List<RebalanceProtocol> supportedProtocols() {
        return delegate.supportedProtocols();
    }

    @Override
    public short version() {
        return delegate.version();
    }

    @Override
    public ByteBuffer subscriptionUserData(Set<String> topics) {
        return delegate.subscriptionUserData(topics);
    }

    static ArrayNode keys(ArrayNode into, Iterable<TopicPartition> partitions) {
        TreeSet<String> sorted = new TreeSet<>();
        for (TopicPartition tp : partitions) {
            sorted.add(tp.topic() + "/" + tp.partition());
        }
        sorted.forEach(into::add);
        return into;
    }

    @Override
    public GroupAssignment assign(Cluster metadata, GroupSubscription groupSubscription) {
        // Read the subscriptions first: the delegate consumes their userData buffers.
        ObjectNode lead = records.record("L");
        ObjectNode counts = lead.putObject("counts");
        TreeSet<String> topics = new TreeSet<>();
        groupSubscription.groupSubscription().values().forEach(s -> topics.addAll(s.topics()));
        for (String topic : topics) {
            Integer count = metadata.partitionCountForTopic(topic);
            counts.put(topic, count == null ? 0 : count);
        }
        ArrayNode members = lead.putArray("members");
        groupSubscription.groupSubscription().forEach((memberId, s) -> {
            ObjectNode m = members.addObject();
            m.put("id", memberId);
            m.put("iid", s.groupInstanceId().orElse(null));
            ArrayNode subscribed = m.putArray("topics");
            new TreeSet<>(s.topics()).forEach(subscribed::add);
            m.put("ud", hex(s.userData()));
            ArrayNode owned = m.putArray("owned");
            for (TopicPartition tp : s.ownedPartitions()) {
                owned.addArray().add(tp.topic()).add(tp.partition());
            }
            m.put("ogen", s.generationId().orElse(-1));
        });
        GroupAssignment out = delegate.assign(metadata, groupSubscription);
        ObjectNode sent = lead.putObject("out");
        out.groupAssignment().forEach((memberId, a) -> keys(sent.putArray(memberId), a.partitions()));
        // The generation is known once this member's own assignment arrives (onAssignment).
        pendingLead = lead;
        return out;
    }

    @Override
    public void onAssignment(Assignment assignment, ConsumerGroupMetadata metadata) {
        delegate.onAssignment(assignment, metadata);
        if (pendingLead != null) {
            pendingLead.put("gen", metadata.generationId());
            records.write(pendingLead);
            pendingLead = null;
        }
        ObjectNode g = records.record("g");
        g.put("gen", metadata.generationId());
        g.put("mid", metadata.memberId());
        keys(g.putArray("q"), assignment.partitions());
        records.write(g);
    }

    static String hex(ByteBuffer buffer) {
        if (buffer == null) {
            return "";
        }
        ByteBuffer b = buffer.duplicate();
        StringBuilder s = new StringBuilder();
        while (b.hasRemaining()) {
            s.append(String.format("%02x", b.get() & 0xff));
        }
        return s.toString();
    }
}
