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
...         raise SaslAuthenticationFailedError("SaslAuthenticationError: Authentication failed: Invalid username or password")
... except AuthenticationFailedError as e:
...     print(e)
SASL authentication as 'alice' (PLAIN) failed at 127.0.0.1:9093: Authentication failed: Invalid username or password
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from kafka.errors import KafkaError, SaslAuthenticationFailedError, UnsupportedSaslMechanismError

from mqbalance.exceptions import AuthenticationFailedError, RemotingError, TlsHandshakeError

__all__ = ["explained_failures", "explain"]

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
        if found is None:
            raise
        raise found from None
    finally:
        logger.removeHandler(capture)
        logger.propagate = propagate
        logger.setLevel(level)


def _chain(e: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo: list[BaseException | None] = [e]
    while todo:
        x = todo.pop(0)
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        todo += [x.__cause__, x.__context__]


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
            text = str(c).partition("SaslAuthenticationError: ")[2] or str(c) or type(c).__name__
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
            if "CERTIFICATE_REQUIRED" in reason:
                what = "the broker requires a client certificate (ssl.keystore.location)"
            elif any(r in reason for r in ("BAD_CERTIFICATE", "UNKNOWN_CA", "CERTIFICATE_UNKNOWN")):
                what = f"the broker did not accept the client certificate ({c.reason})"
            elif "WRONG_VERSION_NUMBER" in reason or "RECORD_LAYER_FAILURE" in reason:
                what = f"the listener does not speak TLS (security.protocol={config.get('security_protocol')})"
            else:
                what = str(c.reason or c)
            return TlsHandshakeError(f"TLS handshake with {bootstrap} failed: {what}", bootstrap)
    return None
