"""A Kafka client properties file, as Kafka's own tools take it (``--command-config FILE``), turned
into kafka-python's keyword arguments for every client mqbalance creates.

Supported: ``security.protocol`` PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL; ``sasl.mechanism`` PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512 with ``sasl.jaas.config`` (``PlainLoginModule`` / ``ScramLoginModule``
``required username="…" password="…";``); TLS with PEM files: the CA (``ssl.truststore.location``
with ``ssl.truststore.type=PEM``, or the certificates inline in ``ssl.truststore.certificates``),
a client certificate and key (``ssl.keystore.location`` with ``ssl.keystore.type=PEM``: the key and
its chain in one file, the key encrypted with ``ssl.key.password`` or not),
``ssl.endpoint.identification.algorithm`` (``https``, the default, or empty: no host name check),
``ssl.protocol`` / ``ssl.enabled.protocols`` (TLSv1.2, TLSv1.3). JKS and PKCS12 stores are refused
with the command that converts them to PEM; any other key is refused by name
(:class:`~mqbalance.exceptions.ClientConfigError`). An error never shows a value that may be a
secret. Secrets come back as :class:`Secret`, a ``str`` whose ``repr`` is ``'***'``, so that a
client that logs its configuration (kafka-python's admin client does, at DEBUG) shows no password.

The file is read as ``java.util.Properties.load`` reads a stream: ISO-8859-1, ``#``/``!``
comments, ``=``, ``:`` or blanks between key and value, backslash escapes (``\\uXXXX`` too) and
continuation lines. Relative paths are relative to the working directory, as in Java.

>>> cfg = client_config_from_properties({
...     "security.protocol": "SASL_PLAINTEXT",
...     "sasl.mechanism": "SCRAM-SHA-256",
...     "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
...                         'username="alice" password="alice-secret";',
... })
>>> cfg  # doctest: +NORMALIZE_WHITESPACE
{'security_protocol': 'SASL_PLAINTEXT', 'sasl_mechanism': 'SCRAM-SHA-256',
 'sasl_plain_username': 'alice', 'sasl_plain_password': '***'}
>>> cfg["sasl_plain_password"] == "alice-secret"
True
>>> parse_properties("a.b = 1\\\\\\n   2\\n# c=3\\nd:e\\\\u0041")
{'a.b': '12', 'd': 'eA'}
"""

from __future__ import annotations

import atexit
import os
import shutil
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mqbalance.exceptions import ClientConfigError

__all__ = [
    "Secret",
    "parse_properties",
    "read_properties",
    "client_config_from_properties",
    "load_client_config",
    "SUPPORTED_KEYS",
]


class Secret(str):
    """A secret string (a password): equal to its value, shown as ``'***'`` by ``repr``.

    >>> Secret("hunter2"), Secret("hunter2") == "hunter2"
    ('***', True)
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "'***'"


#: The keys :func:`client_config_from_properties` understands.
SUPPORTED_KEYS = (
    "security.protocol",
    "sasl.mechanism",
    "sasl.jaas.config",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.truststore.certificates",
    "ssl.truststore.password",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "ssl.protocol",
    "ssl.enabled.protocols",
)

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
TLS_VERSIONS = ("TLS", "TLSv1.2", "TLSv1.3")

_WHITE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[str]:
    """The logical lines of a properties text: comments and blank lines dropped, continuations
    joined (a line ending in an odd number of backslashes goes on, the next line's leading blanks
    dropped)."""
    out: list[str] = []
    pending: str | None = None
    for raw in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = raw.lstrip(_WHITE)
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        continued = trailing % 2 == 1
        body = line[:-1] if continued else line
        pending = body if pending is None else pending + body
        if not continued:
            out.append(pending)
            pending = None
    if pending is not None:
        out.append(pending)
    return out


def _unescape(text: str, line: int) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        n = text[i + 1]
        if n == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise ClientConfigError(f"logical line {line}: malformed \\uXXXX escape", None)
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(n, n))
        i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """A logical line's raw key and raw value: the key ends at the first unescaped ``=``, ``:`` or
    blank; blanks, then one ``=`` or ``:``, then blanks separate it from the value."""
    i, escaped = 0, False
    while i < len(line):
        c = line[i]
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in "=:" or c in _WHITE:
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(_WHITE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITE)
    return key, rest


def parse_properties(text: str) -> dict[str, str]:
    """The key/value pairs of a Java properties text (the last of a repeated key wins)."""
    if not isinstance(text, str):
        raise ClientConfigError(f"properties text must be a str, got {type(text).__name__} {_short(text)}", text)
    props: dict[str, str] = {}
    for n, line in enumerate(_logical_lines(text), 1):
        key, value = _split(line)
        props[_unescape(key, n)] = _unescape(value, n)
    return props


def read_properties(path: str | Path) -> dict[str, str]:
    """The properties of the file at ``path``, read as Java reads a stream (ISO-8859-1). A file
    that cannot be read is a :class:`~mqbalance.exceptions.ClientConfigError` naming it."""
    try:
        text = Path(path).read_bytes().decode("iso-8859-1")
    except OSError as e:
        raise ClientConfigError(f"--command-config {path}: {e.strerror or e}", None, str(path)) from None
    try:
        return parse_properties(text)
    except ClientConfigError as e:
        raise ClientConfigError(f"{path}: {e.message}", None, str(path)) from None


def _jaas_tokens(text: str, key: str, where: str) -> list[tuple[str, str]]:
    """JAAS tokens as (kind, text): ``w`` a word, ``q`` a quoted string, ``=`` or ``;``."""
    tokens: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "=;":
            tokens.append((c, c))
            i += 1
        elif c == '"':
            out, i = [], i + 1
            while i < len(text) and text[i] != '"':
                if text[i] == "\\" and i + 1 < len(text):
                    i += 1
                    out.append(_ESCAPES.get(text[i], text[i]))
                else:
                    out.append(text[i])
                i += 1
            if i >= len(text):
                raise ClientConfigError(f"{where}: {key}: a quoted value is not closed", key)
            tokens.append(("q", "".join(out)))
            i += 1
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in '=;"':
                j += 1
            tokens.append(("w", text[i:j]))
            i = j
    return tokens


def _jaas(text: str, key: str, where: str) -> tuple[str, dict[str, str]]:
    """``LoginModule flag name="value" …;`` (one module): its class name and options."""
    tokens = _jaas_tokens(text, key, where)
    shape = f"{where}: {key}: expected 'LoginModuleClass required name=\"value\" ...;'"
    if len(tokens) < 3 or tokens[0][0] != "w" or tokens[1][0] != "w" or tokens[-1][0] != ";":
        raise ClientConfigError(shape, key)
    module, flag = tokens[0][1], tokens[1][1]
    if flag not in ("required", "requisite", "sufficient", "optional"):
        raise ClientConfigError(f"{shape} (the control flag is not one of required, requisite, ...)", key)
    options: dict[str, str] = {}
    body = tokens[2:-1]
    if len(body) % 3 or any(";" in (k for k, _ in body[i : i + 3]) for i in range(0, len(body), 3)):
        n = sum(1 for k, _ in tokens if k == ";")
        raise ClientConfigError(shape if n == 1 else f"{where}: {key}: one login module expected, got {n}", key)
    for i in range(0, len(body), 3):
        (kn, name), (ke, _), (kv, value) = body[i : i + 3]
        if kn != "w" or ke != "=" or kv not in ("w", "q"):
            raise ClientConfigError(shape, key)
        options[name] = value
    return module, options


def _readable(path: str, key: str, where: str) -> str:
    if not os.path.isfile(path) or not os.access(path, os.R_OK):
        why = "no such file" if not os.path.exists(path) else "not a readable file"
        raise ClientConfigError(f"{where}: {key}: {path}: {why}", key)
    return path


_private_dir: str | None = None


def _private_file(name: str, text: str) -> str:
    """A file only this user can read, removed when the process exits (kafka-python loads CA
    certificates from a file)."""
    global _private_dir
    if _private_dir is None:
        _private_dir = tempfile.mkdtemp(prefix="mqbalance-kafka-")
        atexit.register(shutil.rmtree, _private_dir, True)
    path = os.path.join(_private_dir, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def _convert_hint(kind: str, store: str, path: str) -> str:
    if kind == "truststore":
        if store == "PKCS12":
            return f"openssl pkcs12 -in {path} -nokeys -out ca.pem"
        return f"keytool -exportcert -rfc -keystore {path} -alias <CA alias> -file ca.pem"
    if store == "PKCS12":
        return f"openssl pkcs12 -in {path} -out client.pem  (then ssl.keystore.location=client.pem)"
    return (
        f"keytool -importkeystore -srckeystore {path} -destkeystore client.p12 -deststoretype PKCS12; "
        "openssl pkcs12 -in client.p12 -out client.pem"
    )


def client_config_from_properties(
    properties: Mapping[str, str], *, source: str = "client properties"
) -> dict[str, Any]:
    """kafka-python's keyword arguments (``security_protocol``, ``sasl_mechanism``,
    ``sasl_plain_username``, ``sasl_plain_password``, ``ssl_cafile``, ``ssl_certfile``,
    ``ssl_keyfile``, ``ssl_password``, ``ssl_check_hostname``) for Kafka client ``properties``;
    ``source`` names them in errors. The TLS files are loaded once here, so a wrong key password or
    a file that is not PEM fails now, naming the key."""
    where = source
    if not isinstance(properties, Mapping):
        raise ClientConfigError(
            f"{where}: properties must be a mapping of str to str, got {type(properties).__name__} "
            f"{_short(properties)}",
            properties,
        )
    given: Mapping[Any, Any] = properties  # checked: callers may pass anything
    for k, v in given.items():
        if not isinstance(k, str) or not isinstance(v, str):
            name = k if isinstance(k, str) else repr(k)  # a key, never its value
            raise ClientConfigError(f"{where}: {name}: keys and values must be str", name)
    unknown = sorted(k for k in properties if k not in SUPPORTED_KEYS)
    if unknown:
        raise ClientConfigError(
            f"{where}: {unknown[0]}: not supported by mqbalance's Kafka clients "
            f"(supported: {', '.join(SUPPORTED_KEYS)})",
            unknown[0],
        )
    props = {k: v.strip() if k != "sasl.jaas.config" else v for k, v in properties.items()}
    protocol = props.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise ClientConfigError(
            f"{where}: security.protocol: must be one of {', '.join(PROTOCOLS)}, got {protocol!r}",
            "security.protocol",
        )
    out: dict[str, Any] = {"security_protocol": protocol}
    sasl, tls = protocol.startswith("SASL_"), protocol.endswith("SSL")
    if sasl:
        out.update(_sasl(props, where))
    else:
        for key in ("sasl.mechanism", "sasl.jaas.config"):
            if key in props:
                raise ClientConfigError(f"{where}: {key}: set, but security.protocol is {protocol} (no SASL)", key)
    if tls:
        out.update(_tls(props, where))
    else:
        ssl_keys = [k for k in props if k.startswith("ssl.")]
        if ssl_keys:
            raise ClientConfigError(
                f"{where}: {ssl_keys[0]}: set, but security.protocol is {protocol} (no TLS)", ssl_keys[0]
            )
    return out


def _sasl(props: Mapping[str, str], where: str) -> dict[str, Any]:
    mechanism = props.get("sasl.mechanism")
    if mechanism is None:
        raise ClientConfigError(
            f"{where}: sasl.mechanism: not set (Kafka's default is GSSAPI, which mqbalance does not support): "
            f"set one of {', '.join(MECHANISMS)}",
            "sasl.mechanism",
        )
    if mechanism not in MECHANISMS:
        raise ClientConfigError(
            f"{where}: sasl.mechanism: {mechanism} is not supported (supported: {', '.join(MECHANISMS)})",
            "sasl.mechanism",
        )
    if "sasl.jaas.config" not in props:
        raise ClientConfigError(
            f"{where}: sasl.jaas.config: not set; for {mechanism}: "
            f'{MECHANISMS[mechanism]} required username="..." password="...";',
            "sasl.jaas.config",
        )
    module, options = _jaas(props["sasl.jaas.config"], "sasl.jaas.config", where)
    if module != MECHANISMS[mechanism]:
        raise ClientConfigError(
            f"{where}: sasl.jaas.config: login module {module} does not go with sasl.mechanism={mechanism} "
            f"(expected {MECHANISMS[mechanism]})",
            "sasl.jaas.config",
        )
    extra = sorted(set(options) - {"username", "password"})
    if extra:
        raise ClientConfigError(
            f"{where}: sasl.jaas.config: option {extra[0]} is not supported (only username and password)",
            "sasl.jaas.config",
        )
    for name in ("username", "password"):
        if not options.get(name):
            raise ClientConfigError(f"{where}: sasl.jaas.config: {name} is missing or empty", "sasl.jaas.config")
    return {
        "sasl_mechanism": mechanism,
        "sasl_plain_username": options["username"],
        "sasl_plain_password": Secret(options["password"]),
    }


def _tls(props: Mapping[str, str], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("ssl.protocol", "ssl.enabled.protocols"):
        for version in filter(None, (v.strip() for v in props.get(key, "").split(","))):
            if version not in TLS_VERSIONS:
                raise ClientConfigError(
                    f"{where}: {key}: {version} is not supported (TLSv1.2 or TLSv1.3; kafka-python needs 1.2 or later)",
                    key,
                )
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https")
    if algorithm.lower() not in ("https", ""):
        raise ClientConfigError(
            f"{where}: ssl.endpoint.identification.algorithm: must be https or empty, got {algorithm!r}",
            "ssl.endpoint.identification.algorithm",
        )
    out["ssl_check_hostname"] = algorithm.lower() == "https"
    out.update(_truststore(props, where))
    out.update(_keystore(props, where))
    _load(out, where)
    return out


def _store_type(props: Mapping[str, str], kind: str, where: str) -> str:
    key = f"ssl.{kind}.type"
    store = props.get(key, "JKS").upper()
    if store not in ("PEM", "JKS", "PKCS12"):
        raise ClientConfigError(f"{where}: {key}: must be PEM (or JKS/PKCS12, converted to PEM), got {store!r}", key)
    return store


def _truststore(props: Mapping[str, str], where: str) -> dict[str, Any]:
    location, inline = props.get("ssl.truststore.location"), props.get("ssl.truststore.certificates")
    store = _store_type(props, "truststore", where) if location or inline else "PEM"
    if inline and location:
        raise ClientConfigError(
            f"{where}: ssl.truststore.certificates: give it or ssl.truststore.location, not both",
            "ssl.truststore.certificates",
        )
    if store != "PEM":
        default = " (Kafka's default when ssl.truststore.type is not set)" if "ssl.truststore.type" not in props else ""
        raise ClientConfigError(
            f"{where}: ssl.truststore.type: {store}{default} is not supported, only PEM: convert it with "
            f"`{_convert_hint('truststore', store, location or 'truststore')}` and set "
            "ssl.truststore.location=ca.pem, ssl.truststore.type=PEM",
            "ssl.truststore.type",
        )
    if "ssl.truststore.password" in props:
        raise ClientConfigError(
            f"{where}: ssl.truststore.password: a PEM trust store has no password (Kafka refuses it too)",
            "ssl.truststore.password",
        )
    if inline:
        return {"ssl_cafile": _private_file("truststore.pem", inline.replace("\\n", "\n") + "\n")}
    if location:
        return {"ssl_cafile": _readable(location, "ssl.truststore.location", where)}
    return {}  # the system's trusted CAs


def _keystore(props: Mapping[str, str], where: str) -> dict[str, Any]:
    location = props.get("ssl.keystore.location")
    if location is None:
        for key in ("ssl.keystore.type", "ssl.keystore.password", "ssl.key.password"):
            if key in props:
                raise ClientConfigError(f"{where}: {key}: set, but ssl.keystore.location is not", key)
        return {}
    store = _store_type(props, "keystore", where)
    if store != "PEM":
        default = " (Kafka's default when ssl.keystore.type is not set)" if "ssl.keystore.type" not in props else ""
        raise ClientConfigError(
            f"{where}: ssl.keystore.type: {store}{default} is not supported, only PEM (the private key and its "
            f"certificate chain in one file): convert it with `{_convert_hint('keystore', store, location)}` "
            "and set ssl.keystore.type=PEM, ssl.key.password=<the PEM key's password, if encrypted>",
            "ssl.keystore.type",
        )
    if "ssl.keystore.password" in props:
        raise ClientConfigError(
            f"{where}: ssl.keystore.password: not used by a PEM key store; an encrypted key's password is "
            "ssl.key.password (Kafka refuses it too)",
            "ssl.keystore.password",
        )
    path = _readable(location, "ssl.keystore.location", where)
    out: dict[str, Any] = {"ssl_certfile": path, "ssl_keyfile": path}
    if props.get("ssl.key.password"):
        out["ssl_password"] = Secret(props["ssl.key.password"])
    return out


def _load(cfg: Mapping[str, Any], where: str) -> None:
    """Load the TLS files as kafka-python will, so a bad one fails now, naming its key."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if cfg.get("ssl_cafile"):
        try:
            ctx.load_verify_locations(cfg["ssl_cafile"])
        except (ssl.SSLError, OSError, ValueError) as e:
            raise ClientConfigError(
                f"{where}: ssl.truststore: {cfg['ssl_cafile']}: no PEM certificate could be loaded ({_reason(e)})",
                "ssl.truststore.location",
            ) from None
    if cfg.get("ssl_certfile"):

        def no_password() -> str:
            raise ClientConfigError(
                f"{where}: ssl.key.password: not set, but the key in ssl.keystore.location is encrypted",
                "ssl.key.password",
            )

        try:
            ctx.load_cert_chain(cfg["ssl_certfile"], cfg["ssl_keyfile"], cfg.get("ssl_password") or no_password)
        except ClientConfigError:
            raise
        except (ssl.SSLError, OSError, ValueError) as e:
            if cfg.get("ssl_password") and _encrypted_key(cfg["ssl_certfile"]):
                raise ClientConfigError(
                    f"{where}: ssl.key.password: does not decrypt the key in ssl.keystore.location",
                    "ssl.key.password",
                ) from None
            raise ClientConfigError(
                f"{where}: ssl.keystore.location: {cfg['ssl_certfile']}: not a PEM private key with its "
                f"certificate chain ({_reason(e)})",
                "ssl.keystore.location",
            ) from None


def _encrypted_key(path: str) -> bool:
    """Whether the PEM file at ``path`` holds an encrypted private key (PKCS#8 or OpenSSL's own)."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return False
    return "BEGIN ENCRYPTED PRIVATE KEY" in text or "Proc-Type: 4,ENCRYPTED" in text


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _reason(e: BaseException) -> str:
    return getattr(e, "reason", None) or getattr(e, "strerror", None) or type(e).__name__


def load_client_config(path: str | Path) -> dict[str, Any]:
    """kafka-python's keyword arguments for the Kafka client properties file at ``path`` (what
    ``--command-config`` takes): :func:`read_properties`, then :func:`client_config_from_properties`."""
    try:
        return client_config_from_properties(read_properties(path), source=str(path))
    except ClientConfigError as e:
        e.path = str(path)
        raise
