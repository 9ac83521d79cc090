"""The client against hostile peers on real sockets: nothing listening, a peer that never
answers, a peer that sends garbage, an absurd declared length, a frame cut off mid-way, a code
nobody knows. These tiny local TCP servers test our parser and timeouts against hostile bytes;
they do not stand in for RocketMQ (that is tests/test_remoting.py, against the real servers)."""

from __future__ import annotations

import json
import pickle
import socket
import struct
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator

import pytest

from mqbalance.exceptions import (
    BrokerResponseError,
    InvalidInputError,
    MQBalanceError,
    RemotingConnectError,
    RemotingFrameError,
    RemotingTimeoutError,
)
from mqbalance.remoting import NameServer, RemotingClient
from server_process import free_port


class HostilePeer:
    """Accepts connections on a loopback port; ``behave(conn)`` decides what each one gets."""

    def __init__(self, behave: Callable[[socket.socket], None]) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.addr = f"127.0.0.1:{self.sock.getsockname()[1]}"
        self.behave = behave
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self.behave, args=(conn,), daemon=True).start()

    def close(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()


@pytest.fixture
def peer() -> Iterator[Callable[[Callable[[socket.socket], None]], HostilePeer]]:
    made: list[HostilePeer] = []

    def make(behave: Callable[[socket.socket], None]) -> HostilePeer:
        made.append(HostilePeer(behave))
        return made[-1]

    yield make
    for p in made:
        p.close()


def read_request(conn: socket.socket) -> dict:
    (n,) = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))
    payload = conn.recv(n, socket.MSG_WAITALL)
    (mark,) = struct.unpack(">I", payload[:4])
    return json.loads(payload[4 : 4 + (mark & 0xFFFFFF)])


def frame(header: dict, body: bytes = b"") -> bytes:
    h = json.dumps(header).encode()
    return struct.pack(">II", 4 + len(h) + len(body), len(h)) + h + body


def test_nothing_listening_fails_fast():
    port = free_port()
    start = time.monotonic()
    with pytest.raises(RemotingConnectError, match=f"127.0.0.1:{port}: cannot connect") as info:
        RemotingClient(f"127.0.0.1:{port}", timeout=2.0)
    assert time.monotonic() - start < 1.0 and info.value.addr == f"127.0.0.1:{port}"
    with pytest.raises(RemotingConnectError, match="no name server answered"):
        NameServer(f"127.0.0.1:{port};127.0.0.1:{free_port()}", timeout=1.0).cluster_info()


@pytest.mark.parametrize("addr", ["nohost", "h:", ":1", "h:0", "h:70000", "h:x"])
def test_malformed_addresses(addr):
    with pytest.raises(InvalidInputError, match="is not HOST:PORT") as info:
        RemotingClient(addr)
    assert isinstance(info.value, ValueError) and info.value.value == addr
    with pytest.raises(InvalidInputError, match="timeout must be > 0 s"):
        RemotingClient("127.0.0.1:1", timeout=0)
    with pytest.raises(InvalidInputError, match="no name server address"):
        NameServer(" ; ")


def test_silent_peer_times_out(peer):
    p = peer(lambda conn: time.sleep(30))
    with RemotingClient(p.addr, timeout=0.3) as client:
        start = time.monotonic()
        with pytest.raises(RemotingTimeoutError, match=r"no response to GET_BROKER_CLUSTER_INFO \(106\) within 0.3 s"):
            client.invoke(106)
        assert 0.3 <= time.monotonic() - start < 1.5
        with pytest.raises(RemotingTimeoutError, match="within 0.1 s"):
            client.invoke(106, timeout=0.1)


def test_a_request_that_timed_out_resets_its_connection(peer):
    """Nothing the client sent stays queued for later delivery: the timed-out request's connection
    is closed with a reset (the peer reads ECONNRESET, not an orderly end), and the next request
    opens a new connection."""
    seen: list[str] = []

    def silent(conn: socket.socket) -> None:
        read_request(conn)
        try:
            seen.append("end" if conn.recv(1) == b"" else "data")
        except ConnectionResetError:
            seen.append("reset")

    p = peer(silent)
    with RemotingClient(p.addr, timeout=0.3) as client:
        with pytest.raises(RemotingTimeoutError, match="within 0.3 s"):
            client.invoke(106)
        assert not client.connected and client.connects == 1
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
        assert seen == ["reset"]
        with pytest.raises(RemotingTimeoutError):
            client.invoke(106)
        assert client.connects == 2


def test_garbage_and_absurd_length_refused_without_allocating(peer):
    p = peer(lambda conn: (read_request(conn), conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n"), time.sleep(5)))
    q = peer(
        lambda conn: (read_request(conn), conn.sendall(struct.pack(">i", 2**31 - 1) + b"\x00" * 64), time.sleep(5))
    )
    for server in (p, q):
        tracemalloc.start()
        try:
            with RemotingClient(server.addr, timeout=3.0) as client:
                start = time.monotonic()
                with pytest.raises(RemotingFrameError, match="beyond the limit of 16777216 bytes") as info:
                    client.invoke(106)
                assert time.monotonic() - start < 1.0  # refused at once, not at the timeout
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 1_000_000, peak  # the declared 1.2 GB / 2 GB were never allocated
        assert server.addr in str(info.value) and isinstance(info.value, MQBalanceError)


def test_closed_mid_frame(peer):
    def half(conn: socket.socket) -> None:
        read_request(conn)
        conn.sendall(struct.pack(">i", 100) + b"\x00\x00\x00\x10{")
        conn.close()

    with (
        RemotingClient(peer(half).addr, timeout=3.0) as client,
        pytest.raises(RemotingFrameError, match="closed in the middle of a frame after 5 of 100 bytes"),
    ):
        client.invoke(106)


def test_closed_before_answering_then_reconnects(peer):
    calls = []

    def flaky(conn: socket.socket) -> None:
        req = read_request(conn)
        calls.append(req["code"])
        if len(calls) == 1:
            conn.close()  # the first connection dies with the request in flight
            return
        conn.sendall(frame({"code": 0, "opaque": req["opaque"], "flag": 1, "extFields": {"n": len(calls)}}))
        time.sleep(5)

    with RemotingClient(peer(flaky).addr, timeout=3.0) as client:
        with pytest.raises(RemotingConnectError, match="connection closed by the server"):
            client.invoke(106)
        assert client.invoke_ok(106).ext_fields == {"n": "2"} and client.connects == 2


def test_non_json_header_and_unknown_response_code(peer):
    def answers(conn: socket.socket) -> None:
        while True:
            try:
                req = read_request(conn)
            except (OSError, struct.error):
                return
            if req["code"] == 1:
                conn.sendall(struct.pack(">II", 9, 5) + b"{nope")
            else:
                conn.sendall(frame({"code": 9999, "opaque": req["opaque"], "flag": 1, "remark": "what is this"}))

    p = peer(answers)
    with RemotingClient(p.addr, timeout=2.0) as client:
        response = client.invoke(106)
        assert response.code == 9999
        with pytest.raises(BrokerResponseError) as info:
            client.invoke_ok(106)
        e = info.value
        assert str(e) == f"{p.addr} answered GET_BROKER_CLUSTER_INFO (106) with unknown code 9999: what is this"
        assert (e.code, e.remark, e.request_code, e.addr) == (9999, "what is this", 106, p.addr)
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is BrokerResponseError and (str(back), back.code, back.remark) == (str(e), 9999, e.remark)
        with pytest.raises(RemotingFrameError, match="not JSON"):
            client.invoke(1)


def test_late_response_after_timeout_is_dropped(peer):
    """A pipelined request (``invoke_many``: reads) that timed out keeps the connection: its late
    answer arrives and is dropped, and the next request gets its own on the same connection. A
    request of ``invoke`` that timed out resets the connection: its late answer never arrives, and
    the next request gets its own on a new one."""

    def slow(conn: socket.socket) -> None:
        while True:
            try:
                req = read_request(conn)
                if req["code"] == 1:
                    time.sleep(0.4)
                conn.sendall(frame({"code": 0, "opaque": req["opaque"], "flag": 1, "extFields": {"c": req["code"]}}))
            except (OSError, struct.error):
                return

    with RemotingClient(peer(slow).addr, timeout=2.0) as client:
        (late,) = client.invoke_many([(1, None)], timeout=0.1)
        assert isinstance(late, RemotingTimeoutError)
        time.sleep(0.5)
        assert client.invoke(2).ext_fields == {"c": "2"} and client.connects == 1
        with pytest.raises(RemotingTimeoutError):
            client.invoke(1, timeout=0.1)
        time.sleep(0.5)
        assert client.invoke(2).ext_fields == {"c": "2"} and client.connects == 2
