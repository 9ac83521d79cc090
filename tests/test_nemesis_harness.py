"""The network-fault harness itself does what the scenarios rely on: a partition makes packets vanish
(an established connection hangs, no reset; a new one cannot be made) and heals; a cut drops only
the traffic between two namespaces; nothing is left behind (namespaces, links, rules), not even by a
run that crashed; and the fault proxy delays, loses (late, in order) and silences one direction."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nemesis_net import RULE_PRIORITY, Network, _ip, sweep
from nemesis_proxy import FaultProxy

pytestmark = pytest.mark.nemesis
pytest_plugins = ["nemesis_plugin"]  # `network`
REPO = Path(__file__).resolve().parent.parent

CLIENT = """
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.settimeout(float(sys.argv[3]))
print("connected", flush=True)
for line in sys.stdin:
    t = time.monotonic()
    s.sendall(line.encode())
    try:
        data = s.recv(100)
        print("echo" if data else "closed", round(time.monotonic() - t, 2), flush=True)
    except socket.timeout:
        print("timeout", flush=True)
    except OSError as e:
        print("error", type(e).__name__, flush=True)
"""


class Echo:
    """A TCP echo server on ``host`` (any free port), in a thread of this process."""

    def __init__(self, host: str) -> None:
        self.sock = socket.create_server((host, 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._echo, args=(conn,), daemon=True).start()

    @staticmethod
    def _echo(conn: socket.socket) -> None:
        # a client that is killed, or whose link the test tears down, may reset the connection:
        # for an echo server that is the end of it, as a clean close is
        with conn, contextlib.suppress(ConnectionResetError, BrokenPipeError):
            while data := conn.recv(100):
                conn.sendall(data)

    def close(self) -> None:
        self.sock.close()


def _client(node_netns: str, host: str, port: int, timeout: float) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        ["ip", "netns", "exec", node_netns, sys.executable, "-c", CLIENT, host, str(port), str(timeout)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "connected"
    return p


def _ask(p: subprocess.Popen[str]) -> str:
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write("x\n")
    p.stdin.flush()
    return p.stdout.readline().split()[0]


def test_partition_silences_the_link_without_a_reset_and_heals(network: Network) -> None:
    node = network.node("a")
    echo = Echo(node.gateway)  # the root namespace answers on the root side of the veth
    client = _client(node.netns, node.gateway, echo.port, 1.0)
    try:
        assert _ask(client) == "echo"
        network.partition(node)
        assert _ask(client) == "timeout"  # packets vanish: no answer, and no reset either
        assert _ask(client) == "timeout"
        fresh = node.run(
            [
                sys.executable,
                "-c",
                f"import socket; socket.create_connection(('{node.gateway}', {echo.port}), timeout=1)",
            ]
        )
        # a new connection cannot be made, and nothing answers it: it times out, or — once the node's
        # entry for the gateway's hardware address has expired (a busy run's seconds are long) and
        # nobody answers its ARP probes — the kernel says "No route to host", as with a real pulled
        # cable. Never a refusal (a reset) and never "Network is unreachable" (a route taken away).
        assert "timed out" in fresh.stderr or "No route to host" in fresh.stderr, fresh.stderr
        assert "refused" not in fresh.stderr and "Network is unreachable" not in fresh.stderr
        network.heal(node)
        # the same TCP connection carries on once the cable is back (its data was retransmitted)
        assert _ask(client) in ("echo", "timeout")
        assert _ask(client) == "echo"
    finally:
        client.kill()
        client.communicate()  # closes its pipes
        echo.close()


def test_cut_drops_only_the_traffic_between_two_namespaces(network: Network) -> None:
    a, b, c = network.node("a"), network.node("b"), network.node("c")
    server = b.popen(
        [sys.executable, "-c", "import socket,time;s=socket.create_server(('0.0.0.0',7000));time.sleep(60)"]
    )
    time.sleep(0.5)
    probe = f"import socket; socket.create_connection(('{b.addr}', 7000), timeout=1); print('ok')"
    assert a.run([sys.executable, "-c", probe]).stdout.strip() == "ok"  # namespace to namespace
    network.cut(a, b)
    assert "timed out" in a.run([sys.executable, "-c", probe]).stderr
    assert c.run([sys.executable, "-c", probe]).stdout.strip() == "ok"  # c still reaches b
    network.heal()
    assert a.run([sys.executable, "-c", probe]).stdout.strip() == "ok"
    server.kill()


def test_close_leaves_nothing_and_sweep_removes_a_crashed_run() -> None:
    # a "crashed run": a child process makes a namespace, a veth and a rule, and dies without cleanup
    code = (
        "import sys; sys.path.insert(0, 'tests/support'); from nemesis_net import Network; "
        "n = Network('crash'); a = n.node('a'); b = n.node('b'); n.cut(a, b); print(a.netns, a.host_if)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    netns, host_if = out.stdout.split()
    assert netns in _ip("netns", "list").stdout and host_if in _ip("link", "show").stdout
    assert "blackhole" in _ip("rule", "show", "priority", str(RULE_PRIORITY)).stdout
    removed = sweep()
    assert netns in removed and any(r.startswith("rule ") for r in removed)
    assert netns not in _ip("netns", "list").stdout and host_if not in _ip("link", "show").stdout
    # and a network closed normally leaves nothing of its own
    with Network("tidy") as net:
        x, y = net.node("x"), net.node("y")
        net.cut(x, y)
        net.partition(x)
        names = [x.netns, y.netns, x.host_if, y.host_if]
    left = _ip("netns", "list").stdout + _ip("link", "show").stdout
    assert not [n for n in names if n in left]
    # whole addresses: another file's network (another test process) may hold 198.18.0.22 meanwhile
    assert x.addr not in _ip("rule", "show").stdout.split()


def test_proxy_delays_loses_in_order_and_silences_one_direction() -> None:
    echo = Echo("127.0.0.1")
    proxy = FaultProxy(("127.0.0.1", 0), ("127.0.0.1", echo.port), seed=7).start()
    try:
        with socket.create_connection(proxy.address, timeout=5) as s:
            t = time.monotonic()
            s.sendall(b"a")
            assert s.recv(10) == b"a" and time.monotonic() - t < 0.1
            proxy.up.delay = proxy.down.delay = 0.2  # 200 ms each way
            t = time.monotonic()
            s.sendall(b"b")
            assert s.recv(10) == b"b" and 0.38 < time.monotonic() - t < 0.8
            proxy.up.delay = proxy.down.delay = 0.0
            proxy.up.loss = 1.0  # every chunk lost once: one RTO late (doubling), never dropped or reordered
            got = b""
            t = time.monotonic()
            for ch in b"cdef":
                s.sendall(bytes([ch]))
                time.sleep(0.01)
            while len(got) < 4:
                got += s.recv(10)
            assert got == b"cdef" and time.monotonic() - t > 0.2 and proxy.lost_chunks >= 4
            proxy.up.loss = 0.0
            proxy.down.silent = True  # requests reach the server, answers do not
            s.settimeout(0.5)
            s.sendall(b"g")
            with pytest.raises(TimeoutError):
                s.recv(10)
            proxy.heal()  # what was held back is delivered
            s.settimeout(5)
            assert s.recv(10) == b"g"
    finally:
        proxy.close()
        echo.close()
