package io.mqbalance.harness.kafka;

import io.mqbalance.harness.KafkaOracle;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

/**
 * Times Kafka's broker-side assignors ({@code UniformAssignor}, {@code RangeAssignor}) for
 * {@code benches/kafka_server_vs_java.py}: one warm JVM, the group spec built once from stdin
 * outside any timed region, then {@code assign} timed round by round on request, so that the
 * caller can interleave Java's rounds with its own.
 *
 * <p>The first line is the group, space-separated tokens: {@code name ntopics (topicId count)*
 * nmembers (memberId instance rack nsubs topicId* ncur (topicId n partition*)*)*}; {@code ~}
 * stands for none (instance, rack) and {@code nsubs} {@code =} reuses the previous member's
 * subscription (the same {@code Set} object, as the coordinator shares one per distinct
 * subscription). It answers {@code {"ready": true}}. Each further line {@code k} runs {@code k}
 * rounds and answers {@code {"ns": [..], "assigned": ..}} (each round's nanoseconds; {@code
 * assigned}: partitions in the last result, a check that the work was done). End of input ends it.
 *
 * <p>Example: {@code printf '<group>\n5\n1\n' | java -cp ... io.mqbalance.harness.kafka.ServerAssignorBench}.
 */
public final class ServerAssignorBench {

    private ServerAssignorBench() {}

    /** One parsed line: the assignor, its group spec and the metadata. */
    private static final class Case {
        ConsumerGroupPartitionAssignor assignor;
        GroupSpec spec;
        SubscribedTopicDescriber topics;
    }

    private static Optional<String> optional(String token) {
        return token.equals("~") ? Optional.empty() : Optional.of(token);
    }

    static Case parse(String line) {
        String[] tok = line.trim().split(" ");
        int i = 0;
        Case c = new Case();
        String name = tok[i++];
        switch (name) {
            case "uniform":
                c.assignor = new UniformAssignor();
                break;
            case "range":
                c.assignor = new RangeAssignor();
                break;
            default:
                throw new IllegalArgumentException("unknown assignor '" + name + "' (uniform, range)");
        }
        Map<String, Uuid> ids = new HashMap<>();
        Map<Uuid, Integer> counts = new HashMap<>();
        int nTopics = Integer.parseInt(tok[i++]);
        for (int k = 0; k < nTopics; k++) {
            Uuid id = Uuid.fromString(tok[i]);
            ids.put(tok[i++], id);
            counts.put(id, Integer.parseInt(tok[i++]));
        }
        int nMembers = Integer.parseInt(tok[i++]);
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new LinkedHashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        Map<Uuid, Integer> subscribers = new HashMap<>();
        Set<Uuid> previous = Set.of();
        for (int m = 0; m < nMembers; m++) {
            String memberId = tok[i++];
            Optional<String> instance = optional(tok[i++]);
            Optional<String> rack = optional(tok[i++]);
            String nSubs = tok[i++];
            Set<Uuid> subscribed = previous;
            if (!nSubs.equals("=")) {
                subscribed = new LinkedHashSet<>();
                for (int k = Integer.parseInt(nSubs); k > 0; k--) {
                    subscribed.add(ids.computeIfAbsent(tok[i], Uuid::fromString));
                    i++;
                }
                subscribed = Collections.unmodifiableSet(subscribed);
            }
            previous = subscribed;
            for (Uuid t : subscribed) {
                subscribers.merge(t, 1, Integer::sum);
            }
            Map<Uuid, Set<Integer>> current = new LinkedHashMap<>();
            for (int k = Integer.parseInt(tok[i++]); k > 0; k--) {
                Uuid t = ids.computeIfAbsent(tok[i++], Uuid::fromString);
                Set<Integer> ps = new LinkedHashSet<>();
                Map<Integer, String> owners = inverted.computeIfAbsent(t, x -> new HashMap<>());
                for (int n = Integer.parseInt(tok[i++]); n > 0; n--) {
                    int p = Integer.parseInt(tok[i++]);
                    ps.add(p);
                    owners.put(p, memberId);
                }
                current.put(t, Collections.unmodifiableSet(ps));
            }
            members.put(memberId, new MemberSubscriptionAndAssignmentImpl(
                    rack, instance, subscribed, new Assignment(Collections.unmodifiableMap(current))));
        }
        // The coordinator's rule: homogeneous when every subscribed topic has every member.
        SubscriptionType type = SubscriptionType.HOMOGENEOUS;
        for (int n : subscribers.values()) {
            if (n != members.size()) {
                type = SubscriptionType.HETEROGENEOUS;
            }
        }
        c.spec = new GroupSpecImpl(members, type, inverted);
        c.topics = new KafkaOracle.Metadata(counts);
        return c;
    }

    private static long assigned(GroupAssignment a) {
        long n = 0;
        for (var m : a.members().values()) {
            for (Set<Integer> ps : m.partitions().values()) {
                n += ps.size();
            }
        }
        return n;
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line = in.readLine();
        if (line == null) {
            return;
        }
        Case c = parse(line);
        line = null;
        System.out.println("{\"ready\": true}");
        System.out.flush();
        for (String request = in.readLine(); request != null; request = in.readLine()) {
            if (request.isBlank()) {
                continue;
            }
            int rounds = Integer.parseInt(request.trim());
            long[] times = new long[rounds];
            GroupAssignment last = null;
            for (int k = 0; k < rounds; k++) {
                long t0 = System.nanoTime();
                last = c.assignor.assign(c.spec, c.topics);
                times[k] = System.nanoTime() - t0;
            }
            System.out.println("{\"ns\": " + Arrays.toString(times) + ", \"assigned\": "
                    + (last == null ? -1 : assigned(last)) + "}");
            System.out.flush();
        }
    }
}
