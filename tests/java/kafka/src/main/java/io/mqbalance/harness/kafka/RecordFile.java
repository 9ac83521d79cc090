package io.mqbalance.harness.kafka;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * An append-only JSON-lines record file in the layout of mqbalance's member records
 * ({@code mqbalance.record_files.RecordWriter}): one object per line, written whole, each stamped with
 * {@code t}, seconds of {@link System#nanoTime()} (CLOCK_MONOTONIC on Linux, as Python's
 * {@code time.monotonic()}), so records of Java and Python processes compare.
 */
final class RecordFile implements AutoCloseable {
    static final ObjectMapper JSON = new ObjectMapper();

    private final FileOutputStream out;

    RecordFile(Path path) {
        try {
            if (path.getParent() != null) {
                Files.createDirectories(path.getParent());
            }
            this.out = new FileOutputStream(path.toFile(), true);
        } catch (IOException e) {
            throw new UncheckedIOException("record file " + path + ": " + e.getMessage(), e);
        }
    }

    static double now() {
        return System.nanoTime() / 1e9;
    }

    ObjectNode record(String kind) {
        ObjectNode node = JSON.createObjectNode();
        node.put("e", kind);
        return node;
    }

    synchronized void write(ObjectNode node) {
        if (!node.has("t")) {
            node.put("t", now());
        }
        try {
            out.write((JSON.writeValueAsString(node) + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public synchronized void close() throws IOException {
        out.close();
    }
}
