"""``--command-config`` on Apache Kafka 4.4.0 itself with its secured listeners (``kafka_java_secured``:
one broker, one listener per security protocol, certificates made by the fixture, random passwords).

* SCRAM over TLS (SASL_SSL): a Java ``KafkaConsumer`` (SCRAM-SHA-512) and ``mqbalance kafka-consume``
  (SCRAM-SHA-256) join one group through the secured listener, each given a client properties file;
  ``mqbalance snapshot --bootstrap --command-config`` reads the group, its committed offsets and its
  lag seconds (the lag-time consumer goes through TLS too);
* PLAIN over SASL_PLAINTEXT, and mutual TLS (SSL, ``ssl.client.auth=required``, the client key
  encrypted with ``ssl.key.password``): snapshots read;
* failures — a wrong password, a CA that does not trust the broker, no client certificate where one
  is required, a plaintext client at a TLS listener, a file that does not exist — exit 2 with one
  line on stderr saying which;
* no run shows a secret: not in any output, snapshot, record file, log (kafka-python's DEBUG log
  included), error message or process command line.
"""

from __future__ import annotations

import json
import logging
import subprocess
import time
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer

from kafka_cluster import MQBALANCE
from kafka_java_cluster import KafkaJavaBroker, MixedKafkaGroup, SecuredListeners
from server_process import wait_for

pytestmark = pytest.mark.java

DEADLINE = 90.0
TOPIC = "secured-orders"
GROUP = "secured-group"


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MQBALANCE), *args], capture_output=True, text=True, timeout=timeout)


def properties(path: Path, lines: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    return path


def jaas(module: str, user: str, password: str) -> str:
    return f'org.apache.kafka.common.security.{module} required \\\n    username="{user}" password="{password}";'


class Files:
    """The client properties files of the tests, one per way in (and out)."""

    def __init__(self, s: SecuredListeners, d: Path) -> None:
        scram = "scram.ScramLoginModule"
        tls = {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(s.pki.ca)}
        self.secrets = [s.scram_password, s.plain_password, s.pki.client_key_password]
        self.scram256 = properties(
            d / "scram256.properties",
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
             "sasl.jaas.config": jaas(scram, s.scram_user, s.scram_password), **tls},
        )  # fmt: skip
        self.scram512 = properties(
            d / "scram512.properties",
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
             "sasl.jaas.config": jaas(scram, s.scram_user, s.scram_password), **tls},
        )  # fmt: skip
        self.wrong_password = d / "wrong-password.properties"
        self.wrong_password.write_text(self.scram256.read_text().replace(s.scram_password, "x" + s.scram_password))
        self.secrets.append("x" + s.scram_password)
        self.untrusted = d / "untrusted.properties"
        self.untrusted.write_text(self.scram256.read_text().replace(str(s.pki.ca), str(s.pki.other_ca)))
        self.plain = properties(
            d / "plain.properties",
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
             "sasl.jaas.config": jaas("plain.PlainLoginModule", s.plain_user, s.plain_password)},
        )  # fmt: skip
        self.mtls = properties(
            d / "mtls.properties",
            {"security.protocol": "SSL", **tls, "ssl.keystore.type": "PEM",
             "ssl.keystore.location": str(s.pki.client_pem), "ssl.key.password": s.pki.client_key_password},
        )  # fmt: skip
        self.tls_only = properties(d / "tls-only.properties", {"security.protocol": "SSL", **tls})


@pytest.fixture(scope="module")
def secured(kafka_java_secured: KafkaJavaBroker, tmp_path_factory: pytest.TempPathFactory) -> Files:
    assert kafka_java_secured.secured is not None
    return Files(kafka_java_secured.secured, tmp_path_factory.mktemp("client-properties"))


def listener(broker: KafkaJavaBroker, protocol: str) -> str:
    assert broker.secured is not None
    return broker.secured.bootstrap(protocol)


def assert_no_secret(files: Files, *texts: str) -> None:
    for text in texts:
        for secret in files.secrets:
            assert secret not in text, "a secret was shown"


def assert_one_line_exit_2(done: subprocess.CompletedProcess[str], *expected: str) -> str:
    line = done.stderr.strip()
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "\n" not in line and line.startswith("mqbalance: error: "), done.stderr
    for text in expected:
        assert text in line, line
    return line


def produce(broker: KafkaJavaBroker, per_partition: dict[int, int]) -> None:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for p, n in per_partition.items():
        for i in range(n):
            producer.send(TOPIC, f"{p}-{i}".encode(), partition=p)
    producer.flush(30)
    producer.close(10)


def command_line(pid: int, word: str) -> str | None:
    """The command line of process ``pid`` once it holds ``word`` (after the exec)."""
    text = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    return text if word in text else None


def snapshot(bootstrap: str, config: Path, out: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = run("snapshot", "--bootstrap", bootstrap, "--command-config", str(config), "-o", str(out))
    assert done.returncode == 0, done.stderr
    return done, json.loads(out.read_text())


def test_scram_over_tls_java_and_mqbalance_members_then_a_snapshot(
    kafka_java_secured: KafkaJavaBroker, secured: Files, tmp_path: Path
) -> None:
    broker = kafka_java_secured
    address = listener(broker, "SASL_SSL")
    broker.create_topic(TOPIC, 3)
    produce(broker, {0: 5, 1: 4, 2: 3})
    outputs: list[str] = []
    with MixedKafkaGroup(broker, GROUP, tmp_path) as group:
        group.start_java("j1", [TOPIC], "range", bootstrap=address, command_config=secured.scram512)
        m = group.start("p1", [TOPIC], "range", bootstrap=address, command_config=secured.scram256)
        cmdline = wait_for(
            "the member's command line",
            lambda: command_line(m.proc.pid, "kafka-consume"),
            timeout=DEADLINE,
        )
        assert str(secured.scram256) in cmdline
        assert_no_secret(secured, cmdline)

        def settled() -> dict[str, Any] | None:
            done, data = snapshot(address, secured.scram256, tmp_path / "live.json")
            outputs.extend([done.stdout, done.stderr, (tmp_path / "live.json").read_text()])
            g = data["groups"].get(GROUP)
            committed = {(o["topic"], o["partition"]): o["offset"] for o in data["offsets"] if o["group"] == GROUP}
            if g is None or g["state"] != "Stable" or len(g["members"]) != 2:
                return None
            return data if committed == {(TOPIC, 0): 5, (TOPIC, 1): 4, (TOPIC, 2): 3} else None

        data = wait_for("both members in a settled group, everything committed", settled, timeout=DEADLINE)
        for member in group.members.values():
            assert member.stop() == 0
        outputs += [p.read_text(errors="replace") for p in tmp_path.glob("*.jsonl")]
        outputs += [p.read_text(errors="replace") for p in tmp_path.glob("*.log")]
    g = data["groups"][GROUP]
    assert sorted(m["clientId"] for m in g["members"]) == ["j1", "p1"]
    owned = sorted(f"{t}/{p}" for m in g["members"] for t, ps in m["assignment"].items() for p in ps)
    assert owned == [f"{TOPIC}/{p}" for p in range(3)]
    assert not data["errors"], data["errors"]

    produce(broker, {1: 2})  # the group has left: its lag, read through TLS by the lag-time consumer
    done, after = snapshot(address, secured.scram512, tmp_path / "after.json")
    outputs += [done.stdout, done.stderr, (tmp_path / "after.json").read_text()]
    lag = [r for r in after["lagTimes"] if r["group"] == GROUP]
    assert [(r["topic"], r["partition"], r["offset"]) for r in lag] == [(TOPIC, 1, 4)], after["errors"]
    assert_no_secret(secured, *outputs)


def test_plain_over_sasl_plaintext_and_mutual_tls(
    kafka_java_secured: KafkaJavaBroker, secured: Files, tmp_path: Path
) -> None:
    broker = kafka_java_secured
    broker.create_topic("secured-plain", 2)
    outputs = []
    for protocol, config in (("SASL_PLAINTEXT", secured.plain), ("SSL", secured.mtls)):
        done, data = snapshot(listener(broker, protocol), config, tmp_path / f"{protocol}.json")
        assert data["topics"]["secured-plain"]["partitions"] == 2, protocol
        assert not data["errors"], (protocol, data["errors"])
        outputs += [done.stdout, done.stderr, json.dumps(data)]
    assert_no_secret(secured, *outputs)


def test_watch_over_scram_and_tls(kafka_java_secured: KafkaJavaBroker, secured: Files, tmp_path: Path) -> None:
    """``watch --bootstrap --command-config``: every client of the watcher (the admin client, the
    follower of ``__consumer_offsets``) goes through SASL_SSL; its ticks read without a gap and
    nothing it prints or writes shows the password."""
    from mqbalance.history.schema import MARKER_FILE
    from mqbalance.history.writer import read_ticks

    broker = kafka_java_secured
    broker.create_topic("secured-watched", 2)
    out = tmp_path / "history"
    argv = ["watch", "--bootstrap", listener(broker, "SASL_SSL"), "--command-config", str(secured.scram256)]
    proc = subprocess.Popen(
        [str(MQBALANCE), *argv, "--out", str(out), "--interval", "1s", "--offsets-interval", "1s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        ticks = wait_for(
            "three ticks of the watcher",
            # until its marker is renamed into place, the new directory holds only the temporary file
            lambda: (out / MARKER_FILE).exists() and read_ticks(out).num_rows >= 3 or None,
            timeout=DEADLINE,
        )
    finally:
        proc.terminate()
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    rows = read_ticks(out).to_pylist()
    assert len(rows) >= 3 and all(r["errors"] == 0 for r in rows), (rows, stderr)
    assert ticks
    written = [p.read_bytes().decode("latin-1") for p in out.rglob("*") if p.is_file()]
    assert_no_secret(secured, stdout, stderr, *written)


def test_failures_are_one_line_and_exit_2(kafka_java_secured: KafkaJavaBroker, secured: Files, tmp_path: Path) -> None:
    """Each failure, its words; the commands run side by side (each waits out its --timeout)."""
    broker = kafka_java_secured
    scram, mtls = listener(broker, "SASL_SSL"), listener(broker, "SSL")
    out = str(tmp_path / "x.json")
    wrong_sasl = ("SASL authentication as 'alice' (SCRAM-SHA-256) failed", "invalid credentials")
    cases = {
        "wrong password": (["--bootstrap", scram, "--command-config", str(secured.wrong_password)], wrong_sasl),
        "untrusted CA": (
            ["--bootstrap", scram, "--command-config", str(secured.untrusted)],
            ("TLS handshake", "not trusted by the CA of ssl.truststore"),
        ),
        "no client certificate": (
            ["--bootstrap", mtls, "--command-config", str(secured.tls_only)],
            ("TLS handshake", "client certificate", "ssl.keystore.location"),
        ),
        "missing file": (
            ["--bootstrap", scram, "--command-config", str(tmp_path / "missing.properties")],
            ("missing.properties", "No such file"),
        ),
        "no --command-config at a TLS listener": (["--bootstrap", mtls], ("--command-config",)),
    }
    started = time.monotonic()
    procs = {
        name: subprocess.Popen([str(MQBALANCE), "snapshot", *argv, "-o", out], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        for name, (argv, _) in cases.items()
    }  # fmt: skip
    procs["kafka-consume, wrong password"] = subprocess.Popen(
        [str(MQBALANCE), "kafka-consume", "--bootstrap", scram, "--command-config", str(secured.wrong_password),
         "--group", GROUP, "--topic", TOPIC, "--record", str(tmp_path / "m.jsonl"), "--duration", "30"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    procs["watch, wrong password"] = subprocess.Popen(
        [str(MQBALANCE), "watch", "--bootstrap", scram, "--command-config", str(secured.wrong_password),
         "--out", str(tmp_path / "history"), "--timeout", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    expected = {name: words for name, (_, words) in cases.items()} | {
        "kafka-consume, wrong password": wrong_sasl,
        "watch, wrong password": wrong_sasl,
    }
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=120)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        line = assert_one_line_exit_2(done, *expected[name])
        print(f"{name}: exit 2 within {time.monotonic() - started:.1f} s: {line}")
        assert_no_secret(secured, stdout, stderr)
    assert not Path(out).exists()


def test_kafka_python_debug_log_shows_no_secret(kafka_java_secured: KafkaJavaBroker, secured: Files) -> None:
    """kafka-python's admin client logs its whole configuration at DEBUG: the password is masked."""
    from mqbalance.fleet.kafka.live import read_kafka_cluster
    from mqbalance.kafka.client_config import load_client_config

    logger, text = logging.getLogger("kafka"), StringIO()
    handler = logging.StreamHandler(text)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        cfg = load_client_config(secured.mtls) | load_client_config(secured.scram256)
        data = read_kafka_cluster(listener(kafka_java_secured, "SASL_SSL"), client_config=cfg, timeout=10)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert not data["errors"], data["errors"]
    assert "sasl_plain_password': '***'" in text.getvalue()
    assert_no_secret(secured, text.getvalue(), repr(cfg))
