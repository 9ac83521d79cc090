"""Certificates for TLS tests, made by the ``openssl`` command (the venv has no ``cryptography``):
a CA, a server certificate it signs for ``127.0.0.1`` / ``localhost``, a client certificate it signs
(its key encrypted, PKCS#8, for ``ssl.key.password``), and a second CA that signed nothing (a
trust store that does not trust the server). Keys are EC P-256 (fast to make); every file is PEM.

>>> # pki = make_pki(tmp_path); pki.ca, pki.server_pem, pki.client_pem, pki.client_key_password
"""

from __future__ import annotations

import secrets
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

DAYS = "2"


@dataclass(frozen=True)
class Pki:
    ca: Path
    """the CA certificate (PEM): the trust store of the broker and of its clients"""
    server_pem: Path
    """the server's private key (unencrypted PKCS#8) then its certificate: a PEM key store"""
    client_pem: Path
    """the client's private key (PKCS#8, encrypted with ``client_key_password``) then its certificate"""
    client_key_password: str
    other_ca: Path
    """a CA that signed nothing here"""
    seconds: float
    """how long making them took"""


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args[:2])} failed: {done.stderr.strip()}")


def _key(name: str, cwd: Path) -> None:
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", name, cwd=cwd)


def _ca(name: str, cwd: Path) -> None:
    _key(f"{name}.key", cwd)
    _openssl(
        "req", "-x509", "-new", "-key", f"{name}.key", "-out", f"{name}.pem", "-days", DAYS,
        "-subj", f"/CN=mqbalance test {name}", cwd=cwd,
    )  # fmt: skip


def _signed(name: str, subject: str, extensions: str, cwd: Path) -> None:
    _key(f"{name}.key", cwd)
    _openssl("req", "-new", "-key", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=cwd)
    (cwd / f"{name}.ext").write_text(extensions)
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", f"{name}.crt", "-days", DAYS, "-extfile", f"{name}.ext", cwd=cwd,
    )  # fmt: skip


def make_pki(directory: Path) -> Pki:
    """Make the certificates in ``directory`` (created)."""
    t0 = time.monotonic()
    directory.mkdir(parents=True, exist_ok=True)
    _ca("ca", directory)
    _ca("other-ca", directory)
    _signed(
        "server", "/CN=localhost", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n", directory
    )
    _signed("client", "/CN=mqbalance-client", "extendedKeyUsage=clientAuth\n", directory)
    server_pem = directory / "server-keystore.pem"
    server_pem.write_text((directory / "server.key").read_text() + (directory / "server.crt").read_text())
    password = secrets.token_urlsafe(12)
    _openssl(
        "pkcs8", "-topk8", "-in", "client.key", "-out", "client-encrypted.key", "-v2", "aes-256-cbc",
        "-passout", f"pass:{password}", cwd=directory,
    )  # fmt: skip
    client_pem = directory / "client-keystore.pem"
    client_pem.write_text((directory / "client-encrypted.key").read_text() + (directory / "client.crt").read_text())
    return Pki(
        ca=directory / "ca.pem",
        server_pem=server_pem,
        client_pem=client_pem,
        client_key_password=password,
        other_ca=directory / "other-ca.pem",
        seconds=time.monotonic() - t0,
    )
