"""Why a kafka-python client could not connect, said precisely: a refused SASL login or a failed
TLS handshake instead of kafka-python's "Unable to bootstrap" after its retries.

kafka-python 3.0 retries a failed bootstrap connection until its deadline and then raises
``KafkaTimeoutError`` (or ``NoBrokersAvailable``); the cause — an ``ssl.SSLCertVerificationError``
behind "Handshake failed", a ``SaslAuthenticationFailedError`` — is only logged. Inside
:func:`explained_failures` those log records are captured (and not printed), and a ``KafkaError``
leaving the block becomes an :class:`~mqbalance.exceptions.AuthenticationFailedError` or a
:class:`~mqbalance.exceptions.TlsHandshakeError` when a captured cause shows one. Messages never
carry a secret of the client configuration (any that a broker's text would echo is masked).

>>> from kafka.errors import KafkaTimeoutError, SaslAuthenticationFailedError
>>> cfg = {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice"}
>>> try:
...     with explained_failures("127.0.0.1:9093", cfg):
...         raise SaslAuthenticationFailedError("SaslAuthenticationError: Invalid username or password")
... except AuthenticationFailedError as e:
...     print(e)
SASL authentication as 'alice' (PLAIN) failed at 127.0.0.1:9093: Invalid username or password
"""

from __future__ import annotations

import logging
import re
import socket
import ssl
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from kafka.errors import (
    InvalidReceiveError,
    KafkaConnectionError,
    KafkaError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from kafka.net.sasl import get_sasl_mechanism
from kafka.net.transport import KafkaSSLTransport
from kafka.protocol.parser import KafkaProtocol
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from mqbalance.exceptions import AuthenticationFailedError, RemotingConnectError, RemotingError, TlsHandshakeError

__all__ = ["explained_failures", "explain", "probe_sasl"]

#: kafka-python's prefixes before the broker's own text: ``[Error 58] SaslAuthenticationFailedError: ...``
_ERROR_PREFIX = re.compile(r"^(\[Error -?\d+\] )?(\w+(Error|Exception): )*")

#: the first byte of a TLS record (alert, handshake), read as a Kafka frame's length by a client
#: that does not speak TLS to a listener that does
_TLS_RECORD_TYPES = (0x15, 0x16)

#: secrets a message must never show: the keyword arguments of :mod:`.client_config` that hold one
SECRET_KEYS = ("sasl_plain_password", "ssl_password")


class _Capture(logging.Handler):
    """Keeps the exceptions kafka-python's log records carry as arguments."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.errors: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args if isinstance(record.args, tuple) else ()
        self.errors.extend(a for a in args if isinstance(a, BaseException))
        if isinstance(record.msg, BaseException):
            self.errors.append(record.msg)


@contextmanager
def explained_failures(bootstrap: str, config: Mapping[str, Any]) -> Iterator[None]:
    """Within: kafka-python's log records are captured, not printed; a ``KafkaError`` raised in
    the block is re-raised as the precise error :func:`explain` finds, else unchanged."""
    logger = logging.getLogger("kafka")
    capture = _Capture()
    level, propagate = logger.level, logger.propagate
    logger.addHandler(capture)
    logger.propagate = False
    if logger.getEffectiveLevel() > logging.WARNING:
        logger.setLevel(logging.WARNING)
    try:
        yield
    except KafkaError as e:
        found = explain([e, *reversed(capture.errors)], bootstrap, config)
        if found is None and str(config.get("security_protocol", "")).startswith("SASL_"):
            found = _sasl_verdict(bootstrap, config)
        if found is None:
            raise
        raise found from None
    finally:
        logger.removeHandler(capture)
        logger.propagate = propagate
        logger.setLevel(level)


def _sasl_verdict(bootstrap: str, config: Mapping[str, Any]) -> AuthenticationFailedError | None:
    """Log in once more, step by step (:func:`probe_sasl`), when kafka-python's failure hides the
    broker's answer: kafka-python 3.0.12 drops the bytes it read in the same pass as the end of the
    stream, and the broker closes the connection right after refusing a login, so its refusal is
    often seen as "socket disconnected"."""
    for address in bootstrap.split(","):
        try:
            refused = probe_sasl(address.strip(), config)
        except (OSError, KafkaError, ValueError):
            continue
        if refused is not None:
            user, mech = config.get("sasl_plain_username"), config.get("sasl_mechanism")
            return AuthenticationFailedError(
                _mask(f"SASL authentication as {user!r} ({mech}) failed at {bootstrap}: {refused}", config), bootstrap
            )
    return None


def probe_sasl(address: str, config: Mapping[str, Any], *, timeout: float = 10.0) -> str | None:
    """Log in at ``address`` (``HOST:PORT``) with ``config``'s SASL settings over a blocking socket
    (TLS too for SASL_SSL): the broker's refusal message, or ``None`` when it accepted. Transport
    failures raise ``OSError`` / ``KafkaError``."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    sock: Any = socket.create_connection((host, int(port)), timeout=timeout)
    try:
        if config.get("security_protocol") == "SASL_SSL":
            tls = {k: v for k, v in config.items() if k.startswith("ssl_")}
            ctx = KafkaSSLTransport._build_ssl_context({**KafkaSSLTransport.DEFAULT_CONFIG, **tls})
            sock = ctx.wrap_socket(sock, server_hostname=host)
        codec = KafkaProtocol(client_id="mqbalance-sasl-probe")

        def call(request: Any) -> Any:
            request.API_VERSION = 1
            codec.send_request(request)
            sock.sendall(codec.send_bytes())
            while True:
                data = sock.recv(65536)
                if not data:
                    raise KafkaConnectionError("the broker closed the connection")
                answers = codec.receive_bytes(data)
                if answers:
                    return answers[0][1]

        mech = config.get("sasl_mechanism")
        answer = call(SaslHandshakeRequest(mechanism=mech))
        if answer.error_code:
            return f"the listener does not enable SASL mechanism {mech} (enabled: {', '.join(answer.mechanisms)})"
        mechanism = get_sasl_mechanism(mech)(host=host, **config)
        while not mechanism.is_done():
            answer = call(SaslAuthenticateRequest(auth_bytes=mechanism.auth_bytes()))
            if answer.error_code:
                return str(answer.error_message or f"error code {answer.error_code}")
            mechanism.receive(answer.auth_bytes)
        return None if mechanism.is_authenticated() else f"SASL {mech} did not complete"
    finally:
        sock.close()


def _chain(e: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo: list[BaseException | None] = [e]
    while todo:
        x = todo.pop(0)
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        todo += [x.__cause__, x.__context__, *(a for a in x.args if isinstance(a, BaseException))]


def _mask(text: str, config: Mapping[str, Any]) -> str:
    for key in SECRET_KEYS:
        secret = config.get(key)
        if secret:
            text = text.replace(str(secret), "***")
    return text


def explain(errors: list[BaseException], bootstrap: str, config: Mapping[str, Any]) -> RemotingError | None:
    """The precise error for kafka-python's ``errors`` (the raised one first, then the causes it
    logged, newest first), or ``None`` when none shows a SASL or TLS failure."""
    causes = [c for e in errors for c in _chain(e)]
    for c in causes:
        if isinstance(c, SaslAuthenticationFailedError):
            text = _ERROR_PREFIX.sub("", str(c)) or type(c).__name__
            user, mech = config.get("sasl_plain_username"), config.get("sasl_mechanism")
            return AuthenticationFailedError(
                _mask(f"SASL authentication as {user!r} ({mech}) failed at {bootstrap}: {text}", config), bootstrap
            )
        if isinstance(c, UnsupportedSaslMechanismError):
            return AuthenticationFailedError(
                _mask(f"SASL at {bootstrap}: {str(c) or 'the listener does not enable this mechanism'}", config),
                bootstrap,
            )
    for c in causes:
        if isinstance(c, ssl.SSLCertVerificationError):
            why = c.verify_message or c.reason or str(c)
            if "hostname mismatch" in why.lower() or "ip address mismatch" in why.lower():
                what = (
                    f"the broker's certificate does not name the host it was reached at ({why}); fix the "
                    "certificate, or set ssl.endpoint.identification.algorithm= to skip the check"
                )
            else:
                trusted = "the CA of ssl.truststore" if config.get("ssl_cafile") else "the system's CAs"
                what = f"the broker's certificate is not trusted by {trusted} ({why})"
            return TlsHandshakeError(f"TLS handshake with {bootstrap} failed: {what}", bootstrap)
    for c in causes:
        if isinstance(c, ssl.SSLError):
            reason = (c.reason or str(c)).upper()
            if any(
                r in reason for r in ("CERTIFICATE_REQUIRED", "BAD_CERTIFICATE", "UNKNOWN_CA", "CERTIFICATE_UNKNOWN")
            ):
                if config.get("ssl_certfile"):
                    what = f"the broker did not accept the client certificate of ssl.keystore.location ({c.reason})"
                else:
                    what = f"the broker wants a client certificate: set ssl.keystore.location ({c.reason})"
            elif any(r in reason for r in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "UNEXPECTED_EOF")):
                what = (
                    f"the listener closed the connection in the handshake ({c.reason}): does it speak TLS? "
                    f"(security.protocol={config.get('security_protocol')})"
                )
            else:
                what = str(c.reason or c)
            return TlsHandshakeError(f"TLS handshake with {bootstrap} failed: {what}", bootstrap)
    protocol = config.get("security_protocol", "PLAINTEXT")
    for c in causes:
        frame = re.search(r"Invalid frame length: (\d+)", str(c)) if isinstance(c, InvalidReceiveError) else None
        if frame and int(frame.group(1)) >> 24 in _TLS_RECORD_TYPES and protocol in ("PLAINTEXT", "SASL_PLAINTEXT"):
            return RemotingConnectError(
                f"the Kafka listener at {bootstrap} speaks TLS, the client does not (security.protocol={protocol}): "
                "give --command-config with security.protocol=SSL or SASL_SSL",
                bootstrap,
            )
    if protocol == "PLAINTEXT" and any(isinstance(c, KafkaConnectionError) for c in causes):
        return RemotingConnectError(
            f"the Kafka broker at {bootstrap} accepted connections and closed them: does the listener want "
            "SASL or TLS? (give --command-config)",
            bootstrap,
        )
    return None
