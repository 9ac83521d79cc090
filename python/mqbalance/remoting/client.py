"""One connection to a RocketMQ name server or broker: blocking sockets, a reader thread, requests
pipelined and matched to their responses by ``opaque``; safe to call from many threads at once.

Requests the server initiates (``NOTIFY_CONSUMER_IDS_CHANGED`` when a group's membership changes,
``GET_CONSUMER_RUNNING_INFO`` forwarded from an admin tool) arrive interleaved with responses; they
are handed to ``on_request`` on the client's dispatch thread, in arrival order, so the callback may
itself call :meth:`RemotingClient.invoke` on the same client. A command it returns is sent back as
the response (unless the request was one-way); without a callback such requests are answered with
``REQUEST_CODE_NOT_SUPPORTED`` so the server does not wait.

Every request has a timeout; a connection that drops fails the requests in flight with
:class:`~mqbalance.exceptions.RemotingConnectError` and is re-established by the next request.
A request of :meth:`RemotingClient.invoke` that times out closes its connection with a reset (as
Java's client closes its channel, ``clientCloseSocketIfTimeout``): what was sent and never
acknowledged — over a network partition, say — is dropped by the kernel, never delivered when the
network comes back (a consumer's commit of an old offset arriving after others went on would move
the group's progress back).

>>> try:
...     RemotingClient("127.0.0.1:1", timeout=0.5)
... except RemotingConnectError as e:
...     print(e.addr)
127.0.0.1:1
"""

from __future__ import annotations

import base64
import collections
import contextlib
import hashlib
import hmac
import itertools
import logging
import math
import queue
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, ClassVar

from mqbalance import _validate
from mqbalance.exceptions import (
    BrokerResponseError,
    InvalidInputError,
    RemotingConnectError,
    RemotingError,
    RemotingFrameError,
    RemotingTimeoutError,
)
from mqbalance.remoting.codes import RequestCode, ResponseCode, code_name
from mqbalance.remoting.frame import MAX_FRAME_BYTES, RemotingCommand, decode_payload, frame_length, request_frame

__all__ = ["AclCredentials", "RemotingClient", "RequestHandler"]

#: the longest timeout accepted, in seconds (a day; sockets and waits overflow far beyond it)
MAX_TIMEOUT = 86_400.0

log = logging.getLogger(__name__)

#: ``on_request(client, request)``: the response to send, or ``None``
RequestHandler = Callable[["RemotingClient", RemotingCommand], "RemotingCommand | None"]


class AclCredentials:
    """Access key and secret key: each request is signed as the Java ``AclClientRPCHook`` does
    (``AccessKey`` added to the header fields; ``Signature`` = Base64(HmacSHA1(secret, the field
    values in key order + the body))).

    >>> fields = AclCredentials("ak", "sk").sign({"topic": "T"}, b"")
    >>> fields["AccessKey"], fields["Signature"]
    ('ak', 'vX6jW2Q9g11lvMjNC+gReuZ8fTQ=')
    """

    def __init__(self, access_key: str, secret_key: str, *, security_token: str | None = None) -> None:
        for name, value in (("access_key", access_key), ("secret_key", secret_key), ("security_token", security_token)):
            if value is None and name == "security_token":
                continue
            shown = "***" if name == "secret_key" and isinstance(value, str) else repr(value)
            if not isinstance(value, str):
                raise InvalidInputError(f"{name} must be a str, got {type(value).__name__} {shown}", value)
            if not _encodable(value):
                raise InvalidInputError(f"{name} {shown} is not valid UTF-8 text (a lone surrogate)", value)
        self.access_key, self.secret_key, self.security_token = access_key, secret_key, security_token

    def __repr__(self) -> str:
        return f"AclCredentials(access_key={self.access_key!r}, secret_key=***)"

    def sign(self, ext_fields: Mapping[str, Any], body: bytes) -> dict[str, str]:
        """The header fields with ``AccessKey`` (and ``SecurityToken``) added and ``Signature``
        computed; values are sent as strings (``None`` values are left out, as requests do)."""
        if not isinstance(ext_fields, Mapping):
            raise InvalidInputError(
                f"ext_fields must be a mapping, got {type(ext_fields).__name__} {ext_fields!r:.40}", ext_fields
            )
        if not isinstance(body, (bytes, bytearray, memoryview)):
            raise InvalidInputError(f"body must be bytes, got {type(body).__name__} {body!r:.40}", body)
        fields = {str(k): str(v) for k, v in ext_fields.items() if v is not None and k != "Signature"}
        fields["AccessKey"] = self.access_key
        if self.security_token:
            fields["SecurityToken"] = self.security_token
        try:
            content = "".join(fields[k] for k in sorted(fields)).encode("utf-8") + bytes(body)
        except UnicodeEncodeError as e:
            raise InvalidInputError(f"a header field is not valid UTF-8 text: {e.object!r:.80}", e.object) from None
        digest = hmac.new(self.secret_key.encode("utf-8"), content, hashlib.sha1).digest()
        fields["Signature"] = base64.b64encode(digest).decode("ascii")
        return fields


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


#: a host name or an IPv4/IPv6 literal (with an optional ``%zone``)
_HOST = re.compile(r"[A-Za-z0-9._-]{1,253}|[0-9A-Fa-f:.]{2,45}(%[A-Za-z0-9._-]{1,32})?")


def parse_addr(addr: str) -> tuple[str, int]:
    """``"host:port"`` (``"[v6]:port"`` for IPv6) → ``(host, port)``; an
    :class:`InvalidInputError` naming it otherwise.

    >>> parse_addr("127.0.0.1:9876"), parse_addr("[::1]:9876")
    (('127.0.0.1', 9876), ('::1', 9876))
    """
    if not isinstance(addr, str):
        raise InvalidInputError(f"address must be a str HOST:PORT, got {type(addr).__name__} {addr!r:.80}", addr)
    host, sep, port = addr.strip().rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if (
        not sep
        or not _HOST.fullmatch(host)
        or not (port.isascii() and port.isdigit() and len(port) <= 5)
        or not 0 < int(port) < 65536
    ):
        raise InvalidInputError(f"address {addr!r} is not HOST:PORT (a port from 1 to 65535)", addr)
    return host, int(port)


def check_timeout(value: float, name: str = "timeout") -> float:
    """A timeout in seconds: a finite number above 0, at most :data:`MAX_TIMEOUT`.

    >>> check_timeout(0.5)
    0.5
    """
    try:
        seconds = _validate.number(value, name, positive=True)
    except InvalidInputError:
        seconds = math.nan  # not a number, or not finite
    if not 0 < seconds <= MAX_TIMEOUT:
        raise InvalidInputError(f"{name} must be > 0 s and at most {MAX_TIMEOUT:g} s, got {value!r:.80}", value)
    return seconds


def check_max_frame_bytes(value: int) -> int:
    """The largest frame to accept: an int from 16 to Java's ``int`` maximum (a
    :func:`mqbalance._validate.count`)."""
    limit = _validate.count(value, "max_frame_bytes")
    if limit < 16:
        raise InvalidInputError(f"max_frame_bytes must be at least 16, got {value!r}", value)
    return limit


class _Done:
    """A one-shot flag a waiter can wait on: :class:`threading.Event`'s ``set`` / ``is_set`` /
    ``wait`` on one lock (an event builds a condition, a lock and a deque: a tick of 10^4
    pipelined requests makes one per request)."""

    __slots__ = ("_lock", "_set")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._set = False

    def set(self) -> None:
        if not self._set:
            self._set = True
            self._lock.release()

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float) -> bool:
        if self._set:
            return True
        if self._lock.acquire(timeout=max(0.0, timeout)):
            self._lock.release()
        return self._set


class _Pending:
    __slots__ = ("done", "error", "response")

    def __init__(self) -> None:
        self.done = _Done()
        self.response: RemotingCommand | None = None
        self.error: RemotingError | None = None


class _Connection:
    """One socket and its reader thread; dead once the reader stops."""

    def __init__(self, client: RemotingClient, sock: socket.socket) -> None:
        self.client, self.sock = client, sock
        self.addr = client.addr
        self.pending: dict[int, _Pending] = {}
        self.lock = threading.Lock()
        self.send_lock = threading.Lock()
        self.alive = True
        self.error: RemotingError | None = None
        self.reader = threading.Thread(target=self._read_loop, name=f"mqbalance-remoting-{self.addr}", daemon=True)
        self.reader.start()

    def register(self, opaque: int) -> _Pending:
        p = _Pending()
        with self.lock:
            if not self.alive:
                raise self._dead_error()
            self.pending[opaque] = p
        return p

    def forget(self, opaque: int) -> None:
        with self.lock:
            self.pending.pop(opaque, None)

    def _dead_error(self) -> RemotingError:
        e = self.error or RemotingConnectError(f"{self.addr}: connection closed", self.addr)
        return type(e)(e.message, e.value)

    def send(self, frame: bytes) -> None:
        try:
            with self.send_lock:
                self.sock.sendall(frame)
        except OSError as e:
            self.fail(RemotingConnectError(f"{self.addr}: connection lost while sending: {e}", self.addr))
            raise self._dead_error() from None

    def _recv_exact(self, n: int, *, frame_start: bool) -> bytes | None:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            try:
                k = self.sock.recv_into(view[got:])
            except TimeoutError:
                if not self.alive:
                    raise OSError("closed") from None
                continue
            if k == 0:
                if got == 0 and frame_start:
                    return None
                raise RemotingFrameError(
                    f"{self.addr}: connection closed in the middle of a frame after {got} of {n} bytes", self.addr
                )
            got += k
        return bytes(buf)

    def _read_loop(self) -> None:
        err: RemotingError
        max_bytes = self.client.max_frame_bytes
        try:
            while True:
                prefix = self._recv_exact(4, frame_start=True)
                if prefix is None:
                    raise RemotingConnectError(f"{self.addr}: connection closed by the server", self.addr)
                try:
                    length = frame_length(prefix, max_frame_bytes=max_bytes)
                except RemotingFrameError as e:
                    raise RemotingFrameError(f"{self.addr}: {e}", self.addr) from None
                payload = self._recv_exact(length, frame_start=False)
                assert payload is not None
                try:
                    cmd = decode_payload(payload)
                except RemotingFrameError as e:
                    raise RemotingFrameError(f"{self.addr}: {e}", self.addr) from None
                if cmd.is_response:
                    with self.lock:
                        p = self.pending.pop(cmd.opaque, None)
                    if p is None:
                        log.debug("%s: response to opaque %d that nobody awaits (timed out?)", self.addr, cmd.opaque)
                        continue
                    p.response = cmd
                    p.done.set()
                else:
                    self.client._server_request(self, cmd)
        except RemotingError as e:
            err = e
        except OSError as e:
            err = RemotingConnectError(f"{self.addr}: connection lost: {e}", self.addr)
        except Exception as e:  # never let the reader die silently with requests waiting
            err = RemotingError(f"{self.addr}: reader failed: {e!r}", self.addr)
        self.fail(err)

    def fail(self, err: RemotingError, *, reset: bool = False) -> None:
        """Mark the connection dead, fail the requests in flight with ``err`` and close the socket;
        ``reset``: close it with a reset (``SO_LINGER`` 0), dropping what the kernel still holds to
        send or resend instead of delivering it later."""
        with self.lock:
            if not self.alive:
                return
            self.alive = False
            self.error = err
            waiting, self.pending = list(self.pending.values()), {}
        if not self.client._closed:
            log.info("%s", err)
        for p in waiting:
            p.error = type(err)(err.message, err.value)
            p.done.set()
        with contextlib.suppress(OSError):
            if reset:
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.sock.shutdown(socket.SHUT_RD if reset else socket.SHUT_RDWR)  # wakes the reader; no FIN on a reset
        self.sock.close()


def check_credentials(credentials: AclCredentials | None) -> AclCredentials | None:
    if credentials is not None and not isinstance(credentials, AclCredentials):
        raise InvalidInputError(f"credentials must be AclCredentials or None, got {credentials!r:.80}", credentials)
    return credentials


_SENT_LOCK = threading.Lock()


class RemotingClient:
    """``RemotingClient("127.0.0.1:9876", timeout=3.0)``: connects at once (a
    :class:`RemotingConnectError` within ``timeout`` if it cannot).

    :meth:`invoke` returns the response whatever its code; :meth:`invoke_ok` raises
    :class:`BrokerResponseError` (code and remark) unless it is ``SUCCESS``.
    ``RemotingClient.requests_sent`` counts the requests every client of this process has sent.
    """

    #: requests sent by every client of this process (a watcher reports the difference per tick)
    requests_sent: ClassVar[int] = 0

    def __init__(
        self,
        addr: str,
        *,
        timeout: float = 3.0,
        on_request: RequestHandler | None = None,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        credentials: AclCredentials | None = None,
    ) -> None:
        self.host, self.port = parse_addr(addr)
        self.addr = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        self.timeout = check_timeout(timeout)
        if on_request is not None and not callable(on_request):
            raise InvalidInputError(f"on_request must be callable or None, got {on_request!r:.80}", on_request)
        self.on_request = on_request
        self.max_frame_bytes = check_max_frame_bytes(max_frame_bytes)
        self.credentials = check_credentials(credentials)
        self._opaque = itertools.count(1)
        self._lock = threading.Lock()
        self._conn: _Connection | None = None
        self._closed = False
        self._inbox: queue.Queue[tuple[_Connection, RemotingCommand] | None] | None = None
        self._dispatcher: threading.Thread | None = None
        self.connects = 0
        self._connection()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "connected" if self.connected else "disconnected"
        return f"RemotingClient({self.addr!r}, {state})"

    @property
    def connected(self) -> bool:
        conn = self._conn
        return conn is not None and conn.alive

    def _connection(self) -> _Connection:
        with self._lock:
            if self._closed:
                raise RemotingConnectError(f"{self.addr}: client is closed", self.addr)
            conn = self._conn
            if conn is not None and conn.alive:
                return conn
            try:
                sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            except TimeoutError:
                raise RemotingConnectError(f"{self.addr}: no connection within {self.timeout:g} s", self.addr) from None
            except (OSError, UnicodeError) as e:  # UnicodeError: a host name IDNA refuses
                raise RemotingConnectError(
                    f"{self.addr}: cannot connect: {getattr(e, 'strerror', None) or e}", self.addr
                ) from None
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(max(self.timeout, 1.0))  # sends never block forever; the reader retries
            self._conn = conn = _Connection(self, sock)
            self.connects += 1
            return conn

    def _request(self, code: int, ext_fields: Mapping[str, Any] | None, body: bytes, flag: int) -> RemotingCommand:
        fields = {k: str(v) for k, v in (ext_fields or {}).items() if v is not None}
        with _SENT_LOCK:
            RemotingClient.requests_sent += 1
        if self.credentials is not None:
            fields = self.credentials.sign(fields, body)
        return RemotingCommand(int(code), opaque=next(self._opaque), flag=flag, ext_fields=fields, body=body)

    def invoke(
        self,
        code: int,
        ext_fields: Mapping[str, Any] | None = None,
        body: bytes = b"",
        *,
        timeout: float | None = None,
    ) -> RemotingCommand:
        """Send a request and wait for its response (any code). Header values are sent as
        strings; ``None`` values are left out."""
        wait = self.timeout if timeout is None else check_timeout(timeout)
        cmd = self._request(code, ext_fields, body, 0)
        conn = self._connection()
        p = conn.register(cmd.opaque)
        conn.send(cmd.encode())
        if not p.done.wait(wait):
            conn.forget(cmd.opaque)
            if not p.done.is_set():
                said = f"{self.addr}: no response to {code_name(RequestCode, code)} within {wait:g} s"
                conn.fail(RemotingConnectError(f"{said}: connection reset", self.addr), reset=True)
                raise RemotingTimeoutError(said, self.addr)
        if p.error is not None:
            raise p.error
        assert p.response is not None
        return p.response

    def invoke_many(
        self,
        requests: Sequence[tuple[int, Mapping[str, Any] | None]],
        *,
        timeout: float | None = None,
        window: int = 256,
    ) -> list[RemotingCommand | RemotingError]:
        """Send ``requests`` (``(code, header fields)``, no body) pipelined on this one connection,
        at most ``window`` in flight, and return each one's response (any code) or its error, in
        order. ``timeout`` bounds the wait for each response from the moment it is sent.

        >>> with RemotingClient(addr) as c:  # doctest: +SKIP
        ...     [r.code for r in c.invoke_many([(203, {"consumerGroup": "g1"}), (203, {"consumerGroup": "g2"})])]
        [0, 206]
        """
        wait = self.timeout if timeout is None else check_timeout(timeout)
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise InvalidInputError(f"window must be an int >= 1, got {window!r:.40}", window)
        out: list[RemotingCommand | RemotingError | None] = [None] * len(requests)
        flight: collections.deque[tuple[int, int, _Connection | None, _Pending | None, float]] = collections.deque()

        def settle() -> None:
            i, opaque, conn, p, sent_at = flight.popleft()
            if p is None or conn is None:
                return
            if not p.done.wait(max(0.0, sent_at + wait - time.monotonic())):
                conn.forget(opaque)
                if not p.done.is_set():
                    code = requests[i][0]
                    out[i] = RemotingTimeoutError(
                        f"{self.addr}: no response to {code_name(RequestCode, code)} within {wait:g} s", self.addr
                    )
                    return
            out[i] = p.error if p.error is not None else p.response

        batch = max(1, min(64, window // 2))  # frames joined into one send: one system call, not one each
        for start in range(0, len(requests), batch):
            chunk = range(start, min(start + batch, len(requests)))
            while flight and len(flight) + len(chunk) > window:
                settle()
            frames, sent = [], []
            try:
                conn = self._connection()
                for i in chunk:
                    code, fields = requests[i]
                    if self.credentials is None:  # the frame written at once (the same bytes)
                        opaque = next(self._opaque)
                        strings = {k: str(v) for k, v in (fields or {}).items() if v is not None}
                        frames.append(request_frame(code, opaque, strings))
                    else:
                        cmd = self._request(code, fields, b"", 0)
                        opaque = cmd.opaque
                        frames.append(cmd.encode())
                    sent.append((i, opaque, conn.register(opaque)))
                if self.credentials is None:
                    with _SENT_LOCK:
                        RemotingClient.requests_sent += len(chunk)
                conn.send(b"".join(frames))
            except RemotingError as e:
                for i in chunk:
                    out[i] = e
                for _i, opaque, _p in sent:
                    conn.forget(opaque)
                continue
            now = time.monotonic()
            flight.extend((i, opaque, conn, p, now) for i, opaque, p in sent)
        while flight:
            settle()
        return [r if r is not None else RemotingError(f"{self.addr}: no response", self.addr) for r in out]

    def invoke_ok(
        self,
        code: int,
        ext_fields: Mapping[str, Any] | None = None,
        body: bytes = b"",
        *,
        timeout: float | None = None,
        accept: tuple[int, ...] = (),
    ) -> RemotingCommand:
        """:meth:`invoke`, raising :class:`BrokerResponseError` unless the code is ``SUCCESS``
        (or one of ``accept``)."""
        response = self.invoke(code, ext_fields, body, timeout=timeout)
        if response.code != ResponseCode.SUCCESS and response.code not in accept:
            raise self.response_error(code, response)
        return response

    def response_error(self, request_code: int, response: RemotingCommand) -> BrokerResponseError:
        """The error for a non-success ``response`` to ``request_code``."""
        return BrokerResponseError(
            f"{self.addr} answered {code_name(RequestCode, request_code)} with "
            f"{code_name(ResponseCode, response.code)}: {response.remark or '(no remark)'}",
            (self.addr, int(request_code), response.code, response.remark),
        )

    def invoke_oneway(self, code: int, ext_fields: Mapping[str, Any] | None = None, body: bytes = b"") -> None:
        """Send a one-way request (no response)."""
        self._connection().send(self._request(code, ext_fields, body, 2).encode())

    # -- requests from the server ------------------------------------------------------------
    def _server_request(self, conn: _Connection, cmd: RemotingCommand) -> None:
        with self._lock:
            if self._inbox is None:
                self._inbox = queue.Queue()
                self._dispatcher = threading.Thread(
                    target=self._dispatch_loop, args=(self._inbox,), name=f"mqbalance-dispatch-{self.addr}", daemon=True
                )
                self._dispatcher.start()
            inbox = self._inbox
        inbox.put((conn, cmd))

    def _dispatch_loop(self, inbox: queue.Queue[tuple[_Connection, RemotingCommand] | None]) -> None:
        while (item := inbox.get()) is not None:
            conn, cmd = item
            response: RemotingCommand | None
            if self.on_request is None:
                response = cmd.response(
                    ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=f"{code_name(RequestCode, cmd.code)} not handled"
                )
            else:
                try:
                    response = self.on_request(self, cmd)
                except Exception as e:
                    log.exception("%s: on_request failed for %s", self.addr, code_name(RequestCode, cmd.code))
                    response = cmd.response(ResponseCode.SYSTEM_ERROR, remark=f"{type(e).__name__}: {e}")
            if response is None or cmd.is_oneway or not conn.alive:
                continue
            response.opaque, response.flag = cmd.opaque, response.flag | 1
            try:
                conn.send(response.encode())
            except RemotingError as e:
                log.info("%s: could not answer %s: %s", self.addr, code_name(RequestCode, cmd.code), e)

    # -- life cycle ----------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection; requests in flight fail with :class:`RemotingConnectError`."""
        with self._lock:
            self._closed = True
            conn, self._conn = self._conn, None
            inbox, self._inbox = self._inbox, None
            dispatcher, self._dispatcher = self._dispatcher, None
        if conn is not None:
            conn.fail(RemotingConnectError(f"{self.addr}: client closed", self.addr))
            if conn.reader is not threading.current_thread():
                conn.reader.join(5)
        if inbox is not None:
            inbox.put(None)
            if dispatcher is not None and dispatcher is not threading.current_thread():
                dispatcher.join(5)

    def __enter__(self) -> RemotingClient:
        return self

    def __exit__(self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
