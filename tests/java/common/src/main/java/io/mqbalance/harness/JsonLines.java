package io.mqbalance.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;

/**
 * The oracles' protocol: one JSON object per line on stdin, one reply per line on stdout, in order.
 * Every reply carries the request's {@code id}; a request the oracle cannot run gets
 * {@code {"id", "badRequest": why}} and the process keeps serving until stdin closes. Replies are
 * flushed when the requests read so far are answered, so a batch travels in one round trip.
 * Compiled into every harness module (each module's pom adds this directory to its sources).
 *
 * <p>Example: {@code JsonLines.serve((op, req, reply) -> reply.put("echo", JsonLines.text(req, "x")))}
 * answers {@code {"id":1,"op":"echo","x":"a"}} with {@code {"id":1,"echo":"a"}}.
 */
public final class JsonLines {
    public static final ObjectMapper JSON = new ObjectMapper();
    public static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private JsonLines() {}

    /** A request the oracle cannot run, with the reason (the reply's {@code badRequest}). */
    public static final class BadRequest extends RuntimeException {
        public BadRequest(String why) {
            super(why);
        }
    }

    /** Answers one request: {@code op} is its {@code "op"} field; fill {@code reply} or throw. */
    @FunctionalInterface
    public interface Handler {
        void handle(String op, JsonNode request, ObjectNode reply);
    }

    /** Serve stdin until it closes. What libraries print goes to stderr, never among the replies. */
    public static void serve(Handler handler) throws IOException {
        PrintStream replies = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Writer out = new OutputStreamWriter(replies, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            out.write(JSON.writeValueAsString(answer(handler, line)));
            out.write('\n');
            if (!in.ready()) {
                out.flush(); // the batch sent so far is answered
            }
        }
        out.flush();
    }

    static ObjectNode answer(Handler handler, String line) {
        JsonNode req;
        try {
            req = JSON.readTree(line);
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            return bad(null, "malformed JSON line: " + e.getOriginalMessage());
        }
        if (req == null || !req.isObject()) {
            return bad(null, "a request must be a JSON object");
        }
        JsonNode id = req.get("id");
        ObjectNode reply = NODES.objectNode();
        reply.set("id", id);
        try {
            handler.handle(text(req, "op"), req, reply);
            return reply;
        } catch (BadRequest e) {
            return bad(id, e.getMessage());
        } catch (RuntimeException e) {
            return bad(id, "harness failure: " + e);
        }
    }

    private static ObjectNode bad(JsonNode id, String why) {
        ObjectNode reply = NODES.objectNode();
        reply.set("id", id);
        reply.put("badRequest", why);
        return reply;
    }

    /** The field, or a bad request naming it. */
    public static JsonNode field(JsonNode obj, String name) {
        JsonNode v = obj.get(name);
        if (v == null) {
            throw new BadRequest("missing field '" + name + "'");
        }
        return v;
    }

    /** The string field, or a bad request naming it. */
    public static String text(JsonNode obj, String name) {
        JsonNode v = field(obj, name);
        if (!v.isTextual()) {
            throw new BadRequest("field '" + name + "' must be a string");
        }
        return v.asText();
    }
}
