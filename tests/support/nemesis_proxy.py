"""A fault-injecting TCP proxy for the network-fault tests: what the kernel here cannot do (it has no
``netem``) — delay, loss and one-way silence — done in user space between a client and its server.

The proxy accepts on ``listen`` and relays each connection to ``target``, one asyncio task per
direction, on a loop in a background thread. Each direction has its own :class:`Faults`, changed at
any time (``proxy.up`` client→server, ``proxy.down`` server→client):

* ``delay``: every chunk is delivered ``delay`` (+ up to ``jitter``) seconds after it arrived;
* ``loss``: a chunk is "lost" with this probability. TCP does not lose bytes, it retransmits them,
  so a lost chunk is delivered one retransmission timeout (``rto``, Linux's minimum 200 ms, doubled
  for each further loss in a row) late, and everything behind it waits (head-of-line blocking) —
  what a lossy link does to a TCP stream;
* ``silent``: nothing is delivered in that direction (held back, as TCP would keep retransmitting
  into a one-way partition) until the direction is healed; the other direction still flows, so
  requests reach the server while its answers do not (or the reverse).

Chunks always leave in the order they arrived. Randomness comes from ``seed``. A connection ends
when either side closes (its FIN is passed on once whatever came before it is delivered).

>>> f = Faults(delay=0.2, loss=0.2); f.active, Faults().active
(True, False)
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import threading
import time
from dataclasses import dataclass


@dataclass
class Faults:
    """The faults of one direction (see the module)."""

    delay: float = 0.0
    jitter: float = 0.0
    loss: float = 0.0
    rto: float = 0.2
    silent: bool = False

    @property
    def active(self) -> bool:
        return bool(self.delay or self.jitter or self.loss or self.silent)

    def clear(self) -> None:
        self.delay = self.jitter = self.loss = 0.0
        self.silent = False


class FaultProxy:
    """``FaultProxy((listen_host, 0), (target_host, target_port), seed=1).start()``; connect to
    ``proxy.address``. ``close()`` stops it and drops its connections."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int], *, seed: int = 0) -> None:
        self.listen, self.target = listen, target
        self.up, self.down = Faults(), Faults()
        self.rng = random.Random(seed)
        self.address: tuple[str, int] = listen
        self.connections = 0
        self.lost_chunks = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"fault-proxy-{listen}", daemon=True)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def __repr__(self) -> str:
        return f"FaultProxy({self.address} -> {self.target}, up={self.up}, down={self.down})"

    def start(self) -> FaultProxy:
        self._thread.start()
        fut = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        fut.result(10)
        return self

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.listen[0], self.listen[1], reuse_address=True)
        sock = self._server.sockets[0]
        self.address = sock.getsockname()[:2]

    def heal(self) -> None:
        """Remove every fault, both directions (held-back data is delivered now)."""
        self.up.clear()
        self.down.clear()

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for w in list(self._writers):
            w.transport.abort()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ relaying
    async def _accept(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            s_reader, s_writer = await asyncio.open_connection(*self.target)
        except OSError:
            c_writer.transport.abort()
            return
        for w in (c_writer, s_writer):
            self._writers.add(w)
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await asyncio.gather(
                self._relay(c_reader, s_writer, self.up),
                self._relay(s_reader, c_writer, self.down),
            )
        finally:
            for w in (c_writer, s_writer):
                self._writers.discard(w)
                w.transport.abort()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, faults: Faults) -> None:
        queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()

        async def receive() -> None:
            last_due, streak = 0.0, 0
            try:
                while data := await reader.read(65536):
                    now = time.monotonic()
                    due = now + faults.delay + (self.rng.random() * faults.jitter if faults.jitter else 0.0)
                    if faults.loss and self.rng.random() < faults.loss:
                        self.lost_chunks += 1
                        due += faults.rto * 2 ** min(streak, 4)
                        streak += 1
                    else:
                        streak = 0
                    last_due = max(due, last_due)
                    queue.put_nowait((last_due, data))
            except (ConnectionError, OSError):
                pass
            queue.put_nowait(None)

        async def deliver() -> None:
            try:
                while (item := await queue.get()) is not None:
                    due, data = item
                    while faults.silent or time.monotonic() < due:
                        await asyncio.sleep(0.01 if faults.silent else max(0.0, due - time.monotonic()))
                    writer.write(data)
                    await writer.drain()
                while faults.silent:  # the FIN is held back too
                    await asyncio.sleep(0.01)
                if writer.can_write_eof():
                    writer.write_eof()
            except (ConnectionError, OSError):
                pass

        rx = asyncio.ensure_future(receive())
        try:
            await deliver()
        finally:
            rx.cancel()
