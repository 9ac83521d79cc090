"""``--command-config``: a Kafka client properties file read as Java reads it, mapped to
kafka-python's settings; every refusal a typed error naming the key and never a secret (no server:
the live checks are in ``test_java_kafka_secured.py``)."""

from __future__ import annotations

import pickle
import subprocess
from pathlib import Path

import pytest

from kafka_cluster import MQBALANCE
from mqbalance.exceptions import ClientConfigError, InvalidInputError
from mqbalance.kafka.client_config import (
    Secret,
    client_config_from_properties,
    load_client_config,
    parse_properties,
    read_properties,
)
from tls_pki import Pki, make_pki

SECRET = 's3cr=t:\\"pa ss'  # characters that need care in both syntaxes
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_java_properties_syntax() -> None:
    text = (
        "# a comment\n"
        "  ! another\n"
        "\n"
        "a.b=1\n"
        "c.d : two words  \n"
        "e.f   3\n"
        "g.h=line one \\\n"
        "     continued\\\\\n"
        "i\\:j=k\\=l\\tm\\u00e9\n"
        "# not a continuation \\\n"
        "n=\n"
        "a.b=last wins\r\n"
        "o=p\\"
    )
    assert parse_properties(text) == {
        "a.b": "last wins",
        "c.d": "two words  ",
        "e.f": "3",
        "g.h": "line one continued\\",
        "i:j": "k=l\tmé",
        "n": "",
        "o": "p",
    }


def test_the_file_is_iso_8859_1_as_java_reads_a_stream(tmp_path: Path) -> None:
    f = tmp_path / "c.properties"
    f.write_bytes("k=caf\xe9\n".encode("iso-8859-1"))
    assert read_properties(f) == {"k": "café"}


def test_a_malformed_unicode_escape_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "c.properties"
    f.write_text("k=\\u12\n")
    with pytest.raises(ClientConfigError, match="malformed"):
        read_properties(f)


def sasl(protocol: str, mechanism: str, module: str, password: str = SECRET) -> dict[str, str]:
    escaped = password.replace("\\", "\\\\").replace('"', '\\"')
    return {
        "security.protocol": protocol,
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": f'{module} required username="alice" password="{escaped}";',
    }


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_plaintext(mechanism: str) -> None:
    cfg = client_config_from_properties(sasl("SASL_PLAINTEXT", mechanism, PLAIN if mechanism == "PLAIN" else SCRAM))
    assert cfg == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": SECRET,
    }
    assert isinstance(cfg["sasl_plain_password"], Secret) and SECRET not in repr(cfg)


def test_a_file_as_kafka_tools_take_it(tmp_path: Path, pki: Pki) -> None:
    f = tmp_path / "client.properties"
    f.write_text(
        "security.protocol = SASL_SSL\n"
        "sasl.mechanism: SCRAM-SHA-512\n"
        f"sasl.jaas.config={SCRAM} required \\\n"
        '    username="alice" \\\n'
        '    password="alice-secret";\n'
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={pki.ca}\n"
        "ssl.endpoint.identification.algorithm=\n"
    )
    assert load_client_config(f) == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
        "ssl_check_hostname": False,
        "ssl_cafile": str(pki.ca),
    }


def test_mutual_tls_with_an_encrypted_pem_key(pki: Pki) -> None:
    props = {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.client_pem),
        "ssl.key.password": pki.client_key_password,
        "ssl.enabled.protocols": "TLSv1.3,TLSv1.2",
    }
    cfg = client_config_from_properties(props)
    assert cfg == {
        "security_protocol": "SSL",
        "ssl_check_hostname": True,
        "ssl_cafile": str(pki.ca),
        "ssl_certfile": str(pki.client_pem),
        "ssl_keyfile": str(pki.client_pem),
        "ssl_password": pki.client_key_password,
    }
    assert pki.client_key_password not in repr(cfg)


def test_inline_trusted_certificates(pki: Pki) -> None:
    pem = pki.ca.read_text()
    cfg = client_config_from_properties(
        {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.certificates": pem}
    )
    path = Path(cfg["ssl_cafile"])
    assert path.read_text().strip() == pem.strip() and path.stat().st_mode & 0o077 == 0


def refused(props: dict[str, str], *words: str) -> ClientConfigError:
    with pytest.raises(ClientConfigError) as info:
        client_config_from_properties(props, source="c.properties")
    e = info.value
    assert isinstance(e, InvalidInputError) and isinstance(e, ValueError)
    message = str(e)
    assert message.startswith("c.properties: "), message
    for w in words:
        assert w in message, message
    for secret in (SECRET, "alice-secret", "hunter2"):
        assert secret not in message and secret not in repr(e.value), message
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is ClientConfigError and str(back) == message
    return e


def test_refusals_name_the_key_never_the_secret(tmp_path: Path, pki: Pki) -> None:
    tls = {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca)}
    assert refused({"sasl.login.callback.handler.class": "hunter2"}, "sasl.login.callback.handler.class").value == (
        "sasl.login.callback.handler.class"
    )
    refused({"security.protocol": "SASL_SSLX"}, "security.protocol")
    refused({**sasl("SASL_SSL", "GSSAPI", SCRAM)}, "sasl.mechanism", "GSSAPI")
    no_mechanism = sasl("SASL_PLAINTEXT", "PLAIN", PLAIN)
    del no_mechanism["sasl.mechanism"]
    refused(no_mechanism, "sasl.mechanism", "GSSAPI")
    refused(sasl("SASL_PLAINTEXT", "PLAIN", SCRAM), "sasl.jaas.config", "does not go with")
    refused(
        {**sasl("SASL_PLAINTEXT", "PLAIN", PLAIN), "sasl.jaas.config": f'{PLAIN} required password="{SECRET}";'},
        "username is missing",
    )
    refused(
        {**sasl("SASL_PLAINTEXT", "SCRAM-SHA-256", SCRAM), "sasl.jaas.config": f'{SCRAM} required username="a" '
         f'password="{SECRET}" tokenauth="true";'},
        "tokenauth",
    )  # fmt: skip
    refused(
        {**sasl("SASL_PLAINTEXT", "PLAIN", PLAIN), "sasl.jaas.config": f'{PLAIN} required password="hunter2'},
        "not closed",
    )
    refused({**sasl("SASL_PLAINTEXT", "PLAIN", PLAIN), "sasl.jaas.config": f"{PLAIN} required"}, "expected")
    refused(
        {"security.protocol": "PLAINTEXT", "ssl.truststore.location": str(pki.ca)}, "ssl.truststore.location", "no TLS"
    )
    refused(
        {"security.protocol": "SSL", "ssl.truststore.location": "ts.jks"},
        "ssl.truststore.type",
        "keytool -exportcert",
        "Kafka's default",
    )
    refused({**tls, "ssl.truststore.type": "PKCS12"}, "openssl pkcs12 -in")
    refused({**tls, "ssl.truststore.password": "hunter2"}, "ssl.truststore.password")
    refused({**tls, "ssl.keystore.location": str(pki.client_pem)}, "ssl.keystore.type", "keytool -importkeystore")
    key = {**tls, "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.client_pem)}
    refused(key, "ssl.key.password", "encrypted")
    refused({**key, "ssl.key.password": "hunter2"}, "ssl.key.password", "does not decrypt")
    refused({**key, "ssl.keystore.password": "hunter2"}, "ssl.keystore.password")
    refused({**tls, "ssl.key.password": "hunter2"}, "ssl.key.password", "ssl.keystore.location is not")
    refused({**tls, "ssl.truststore.location": str(tmp_path / "nope.pem")}, "ssl.truststore.location", "no such file")
    (tmp_path / "garbage.pem").write_text("not a certificate")
    refused({**tls, "ssl.truststore.location": str(tmp_path / "garbage.pem")}, "no PEM certificate")
    refused({**tls, "ssl.endpoint.identification.algorithm": "ldap"}, "ssl.endpoint.identification.algorithm")
    refused({**tls, "ssl.protocol": "TLSv1.1"}, "ssl.protocol", "TLSv1.1")


def test_the_cli_says_one_line_and_exits_2(tmp_path: Path) -> None:
    f = tmp_path / "c.properties"
    f.write_text(
        f'security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\nsasl.jaas.config=x required password="{SECRET}";\n'
    )
    for argv in (
        ["snapshot", "--bootstrap", "127.0.0.1:1", "--command-config", str(f), "-o", str(tmp_path / "s.json")],
        ["kafka-consume", "--bootstrap", "127.0.0.1:1", "--command-config", str(f), "--group", "g", "--topic", "t",
         "--record", str(tmp_path / "m.jsonl")],
        ["snapshot", "--bootstrap", "127.0.0.1:1", "--command-config", str(tmp_path / "none"),
         "-o", str(tmp_path / "s.json")],
    ):  # fmt: skip
        done = subprocess.run([str(MQBALANCE), *argv], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "sasl.mechanism: OAUTHBEARER is not supported" in done.stderr or "No such file" in done.stderr
        assert SECRET not in done.stderr + done.stdout
    done = subprocess.run(
        [str(MQBALANCE), "snapshot", "--namesrv", "127.0.0.1:1", "--command-config", str(f),
         "-o", str(tmp_path / "s.json")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "--command-config goes with --bootstrap" in done.stderr
