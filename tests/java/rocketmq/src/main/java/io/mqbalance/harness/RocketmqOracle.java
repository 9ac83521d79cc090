package io.mqbalance.harness;

import static io.mqbalance.harness.JsonLines.JSON;
import static io.mqbalance.harness.JsonLines.NODES;
import static io.mqbalance.harness.JsonLines.field;
import static io.mqbalance.harness.JsonLines.text;

import io.mqbalance.harness.JsonLines.BadRequest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMachineRoomNearby;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByConfig;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByMachineRoom;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Java's answer for RocketMQ allocation and ordering, one JSON line in, one JSON line out.
 *
 * <p>Requests have the shape of a line of tests/vectors/rocketmq/*.jsonl without its answers, plus
 * {@code "op"}: {@code "allocate"} (strategy, params, consumerGroup, mqAll, cidAll, optional
 * {@code calls} — the currentCIDs whose outcome goes in {@code expected}, default every distinct id
 * of cidAll — and optional {@code probes} [{currentCID}]) answers {@code strategyName},
 * {@code expected}, {@code probes} with results, or {@code constructorError}; {@code "sort"} (mqs,
 * cids) answers {@code mqsSorted}, {@code cidsSorted}; {@code "version"} answers the client
 * version. A request the harness cannot read gets {@code {"id", "badRequest": why}}; the process
 * keeps serving until stdin closes.
 *
 * <p>Example: {@code {"op":"sort","id":1,"mqs":[],"cids":["b","a"]}} →
 * {@code {"id":1,"mqsSorted":[],"cidsSorted":["a","b"]}}.
 */
public final class RocketmqOracle {

    /** Our machine-room definition (tests/vectors/rocketmq/README.md): the text before the first '@'. */
    static final class PrefixResolver implements AllocateMachineRoomNearby.MachineRoomResolver {
        static String room(String s) {
            int at = s.indexOf('@');
            return at < 0 ? s : s.substring(0, at);
        }

        @Override
        public String brokerDeployIn(MessageQueue mq) {
            return room(mq.getBrokerName());
        }

        @Override
        public String consumerDeployIn(String clientId) {
            return room(clientId);
        }
    }

    public static void main(String[] args) throws Exception {
        JsonLines.serve((op, req, reply) -> {
            switch (op) {
                case "allocate":
                    allocate(req, reply);
                    break;
                case "sort":
                    sort(req, reply);
                    break;
                case "version":
                    reply.put("version", org.apache.rocketmq.common.MQVersion.getVersionDesc(
                            org.apache.rocketmq.common.MQVersion.CURRENT_VERSION));
                    break;
                default:
                    throw new BadRequest("unknown op '" + op + "' (allocate, sort, version)");
            }
        });
    }

    private static String nullableText(JsonNode v, String what) {
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isTextual()) {
            throw new BadRequest(what + " must be a string or null");
        }
        return v.asText();
    }

    private static List<MessageQueue> queues(JsonNode v, String what) {
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isArray()) {
            throw new BadRequest(what + " must be a list of queues or null");
        }
        List<MessageQueue> out = new ArrayList<>();
        for (JsonNode q : v) {
            if (!q.isObject() || !field(q, "queueId").canConvertToInt()) {
                throw new BadRequest(what + ": a queue is {topic, brokerName, queueId (int)}");
            }
            out.add(new MessageQueue(nullableText(q.get("topic"), "topic"),
                    nullableText(q.get("brokerName"), "brokerName"), q.get("queueId").asInt()));
        }
        return out;
    }

    private static List<String> strings(JsonNode v, String what) {
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isArray()) {
            throw new BadRequest(what + " must be a list of strings or null");
        }
        List<String> out = new ArrayList<>();
        for (JsonNode s : v) {
            out.add(nullableText(s, what + " item"));
        }
        return out;
    }

    /** The strategy a vector's {@code strategy} + {@code params} describe (Java's exceptions pass through). */
    static AllocateMessageQueueStrategy strategy(String name, JsonNode params) {
        switch (name) {
            case "AVG":
                return new AllocateMessageQueueAveragely();
            case "AVG_BY_CIRCLE":
                return new AllocateMessageQueueAveragelyByCircle();
            case "CONSISTENT_HASH": {
                JsonNode n = params.get("virtualNodeCnt");
                if (n == null || n.isNull()) {
                    return new AllocateMessageQueueConsistentHash();
                }
                if (!n.canConvertToInt()) {
                    throw new BadRequest("virtualNodeCnt must be a Java int");
                }
                return new AllocateMessageQueueConsistentHash(n.asInt());
            }
            case "MACHINE_ROOM": {
                AllocateMessageQueueByMachineRoom s = new AllocateMessageQueueByMachineRoom();
                List<String> idcs = strings(params.get("consumeridcs"), "consumeridcs");
                if (idcs != null) {
                    Set<String> set = new LinkedHashSet<>(idcs);
                    s.setConsumeridcs(set);
                }
                return s;
            }
            case "MACHINE_ROOM_NEARBY": {
                JsonNode fb = field(params, "fallback");
                if (!fb.isObject()) {
                    throw new BadRequest("fallback must be {\"strategy\": ..., params...}");
                }
                return new AllocateMachineRoomNearby(strategy(text(fb, "strategy"), fb), new PrefixResolver());
            }
            case "CONFIG": {
                AllocateMessageQueueByConfig s = new AllocateMessageQueueByConfig();
                List<MessageQueue> list = queues(params.get("messageQueueList"), "messageQueueList");
                if (list != null) {
                    s.setMessageQueueList(list);
                }
                return s;
            }
            default:
                throw new BadRequest("unknown strategy '" + name
                        + "' (AVG, AVG_BY_CIRCLE, CONSISTENT_HASH, MACHINE_ROOM, MACHINE_ROOM_NEARBY, CONFIG)");
        }
    }

    static ObjectNode javaError(Throwable e) {
        ObjectNode err = NODES.objectNode();
        err.put("error", e.getClass().getSimpleName());
        // The JVM's text of a NullPointerException is not RocketMQ behaviour.
        err.put("message", e instanceof NullPointerException ? null : e.getMessage());
        return err;
    }

    private static void allocate(JsonNode req, ObjectNode reply) {
        String name = text(req, "strategy");
        JsonNode params = req.has("params") && !req.get("params").isNull() ? req.get("params") : NODES.objectNode();
        if (!params.isObject()) {
            throw new BadRequest("params must be an object");
        }
        String group = nullableText(req.get("consumerGroup"), "consumerGroup");
        if (!req.has("mqAll") || !req.has("cidAll")) {
            throw new BadRequest("missing field '" + (req.has("mqAll") ? "cidAll" : "mqAll") + "'");
        }
        List<MessageQueue> mqAll = queues(req.get("mqAll"), "mqAll");
        List<String> cidAll = strings(req.get("cidAll"), "cidAll");
        AllocateMessageQueueStrategy s;
        try {
            s = strategy(name, params);
        } catch (BadRequest e) {
            throw e;
        } catch (RuntimeException e) {
            reply.set("constructorError", javaError(e));
            return;
        }
        reply.put("strategyName", s.getName());
        List<MessageQueue> source = mqAll;
        if (s instanceof AllocateMessageQueueByConfig) {
            source = ((AllocateMessageQueueByConfig) s).getMessageQueueList();
        }
        List<String> calls = req.has("calls") ? strings(req.get("calls"), "calls") : null;
        if (calls == null) {
            calls = cidAll == null ? List.of() : new ArrayList<>(new LinkedHashSet<>(cidAll));
        }
        ObjectNode expected = reply.putObject("expected");
        for (String cid : calls) {
            if (cid == null) {
                throw new BadRequest("calls: a null currentCID goes in probes");
            }
            expected.set(cid, outcome(s, group, cid, mqAll, cidAll, source));
        }
        JsonNode probes = req.get("probes");
        if (probes != null && !probes.isNull()) {
            if (!probes.isArray()) {
                throw new BadRequest("probes must be a list of {currentCID}");
            }
            ArrayNode done = reply.putArray("probes");
            for (JsonNode p : probes) {
                if (!p.isObject() || !p.has("currentCID")) {
                    throw new BadRequest("probes: each is {\"currentCID\": text or null}");
                }
                String cid = nullableText(p.get("currentCID"), "currentCID");
                ObjectNode d = done.addObject();
                d.put("currentCID", cid);
                d.set("result", outcome(s, group, cid, mqAll, cidAll, source));
            }
        }
    }

    /** One {@code allocate} call: positions (by identity) in {@code source}, a Java error, or null. */
    private static JsonNode outcome(AllocateMessageQueueStrategy s, String group, String cid,
            List<MessageQueue> mqAll, List<String> cidAll, List<MessageQueue> source) {
        List<MessageQueue> got;
        try {
            got = s.allocate(group, cid, mqAll, cidAll);
        } catch (RuntimeException e) {
            return javaError(e);
        }
        if (got == null) {
            return NODES.nullNode();
        }
        Map<MessageQueue, Integer> position = new IdentityHashMap<>();
        if (source != null) {
            for (int i = source.size() - 1; i >= 0; i--) {
                position.put(source.get(i), i);
            }
        }
        ArrayNode out = NODES.arrayNode();
        for (MessageQueue q : got) {
            Integer at = position.get(q);
            if (at == null) {
                throw new IllegalStateException("the strategy returned a queue that is not in its input: " + q);
            }
            out.add(at);
        }
        return out;
    }

    private static void sort(JsonNode req, ObjectNode reply) {
        List<MessageQueue> mqs = queues(field(req, "mqs"), "mqs");
        List<String> cids = strings(field(req, "cids"), "cids");
        if (mqs == null || cids == null) {
            throw new BadRequest("mqs and cids must be lists");
        }
        Collections.sort(mqs);
        Collections.sort(cids);
        ArrayNode q = reply.putArray("mqsSorted");
        for (MessageQueue m : mqs) {
            ObjectNode o = q.addObject();
            o.put("topic", m.getTopic());
            o.put("brokerName", m.getBrokerName());
            o.put("queueId", m.getQueueId());
        }
        ArrayNode c = reply.putArray("cidsSorted");
        for (String s : cids) {
            c.add(s);
        }
    }
}
