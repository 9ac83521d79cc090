package io.mqbalance.harness.kafka;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.TopicPartition;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A deliberately wrong client assignor, for the audit's tests: it gives every member every
 * partition of the topics it subscribes to. The broker stores whatever a classic group's leader
 * sends, so a group led by it really is double-assigned, as a buggy custom assignor would leave it.
 */
public final class EveryoneAssignor implements ConsumerPartitionAssignor {
    @Override
    public String name() {
        return "everyone";
    }

    @Override
    public GroupAssignment assign(Cluster metadata, GroupSubscription groupSubscription) {
        Map<String, Assignment> out = new HashMap<>();
        groupSubscription.groupSubscription().forEach((memberId, subscription) -> {
            List<TopicPartition> all = new ArrayList<>();
            for (String topic : subscription.topics()) {
                Integer count = metadata.partitionCountForTopic(topic);
                for (int p = 0; p < (count == null ? 0 : count); p++) {
                    all.add(new TopicPartition(topic, p));
                }
            }
            out.put(memberId, new Assignment(all));
        });
        return new GroupAssignment(out);
    }
}
