"""Credentials: Kafka client settings reach the consumer, the schema registry's basic
auth, and no secret in any error or repr.

The registry is tests/schema_registry.py's stand-in (no Confluent registry runs here),
requiring HTTP basic auth the way Confluent's does with it enabled (401 and
``WWW-Authenticate`` for missing or wrong credentials). The brokers are real Tansu
brokers: the session's plain one, and one started with ``--authentication``, which
requires SASL (SCRAM-SHA-512 only; no user can log in: see tests/kafka_broker.py)."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from hudi_sync.cli.app import app
from hudi_sync.debezium.ingest import IngestConfig, ingest
from hudi_sync.debezium.registry import SchemaRegistry
from hudi_sync.errors import BadInputError
from hudi_sync.spark import read
from hudi_sync.spark.compat import collect_arrow
from hudi_sync.table import HudiTable
from tests.debezium_events import PostgresLog
from tests.kafka_broker import KafkaBroker
from tests.schema_registry import RegistryServer
from tests.test_debezium_avro_and_cli import SCHEMAS, avro_event

USER, PASSWORD = "reader", "p@ss:w0rd/é"  # characters a URL must escape


class Registry(RegistryServer):
    """A schema registry on 127.0.0.1 that requires ``USER``/``PASSWORD`` (basic auth)."""

    def __init__(self) -> None:
        super().__init__(SCHEMAS, (USER, PASSWORD))


@pytest.fixture(scope="module")
def registry() -> Iterator[Registry]:
    running = Registry()
    yield running
    running.stop()


def _avro_topic(broker: KafkaBroker) -> str:
    topic = f"pg.public.prices_{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, partitions=1)
    row = {"id": 1, "name": "a", "price": None, "day": None, "at": None}
    broker.produce(topic, [avro_event(10, "c", row), avro_event(11, "u", {**row, "name": "b"})])
    return topic


def _escaped_url(registry: Registry, password: str) -> str:
    from urllib.parse import quote

    return registry.url.replace("://", f"://{USER}:{quote(password, safe='')}@")


def test_the_registry_gets_basic_auth_from_user_info_or_the_url(  # type: ignore[no-untyped-def]
    spark, broker, registry, tmp_path
) -> None:
    topic = _avro_topic(broker)
    confluent = {
        "hoodie.streamer.schemaprovider.registry.url": registry.url,
        "basic.auth.credentials.source": "USER_INFO",
        "basic.auth.user.info": f"{USER}:{PASSWORD}",
    }
    in_url = {"hoodie.streamer.schemaprovider.registry.url": _escaped_url(registry, PASSWORD)}
    prefixed = {  # Confluent's serializer spelling, and its registry URL option
        "schema.registry.url": registry.url,
        "schema.registry.basic.auth.user.info": f"{USER}:{PASSWORD}",
    }
    for n, options in enumerate((confluent, in_url, prefixed)):
        path = tmp_path / f"prices{n}"
        config = IngestConfig.from_options(
            str(path), options, bootstrap_servers=broker.bootstrap_servers, topics=(topic,)
        )
        assert ingest(spark, config).batches_committed == 1, options
        assert [r["name"] for r in collect_arrow(read(spark, str(path))).to_pylist()] == ["b"]
    expected = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert set(registry.authorizations) == {expected}


def test_a_wrong_registry_password_is_one_line_exit_2_and_nothing_written(  # type: ignore[no-untyped-def]
    broker, registry, tmp_path
) -> None:
    """Also with --on-error skip: refused credentials are no bad event to skip (skipping
    would commit offsets past every Avro event)."""
    topic = _avro_topic(broker)
    runner = CliRunner()
    dead = tmp_path / "dead.jsonl"
    wrong = "Wr0ng-s3cret"
    url = "hoodie.streamer.schemaprovider.registry.url"
    for n, settings in enumerate(
        (
            [
                f"{url}={registry.url}",
                "basic.auth.credentials.source=USER_INFO",
                f"basic.auth.user.info={USER}:{wrong}",
            ],
            [f"{url}={_escaped_url(registry, wrong)}"],
            [f"{url}={registry.url}"],  # none given
        )
    ):
        path = tmp_path / f"prices{n}"
        args = ["ingest", "debezium", "--table-path", str(path), "--topic", topic]
        args += ["--bootstrap-servers", broker.bootstrap_servers, "--json"]
        args += ["--on-error", "skip", "--dead-letter", str(dead)]
        for setting in settings:
            args += ["-c", setting]
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        line = result.stderr.strip()
        assert "\n" not in line and not result.stdout, result.output
        assert line.startswith(f"error: schema registry {registry.url}/schemas/ids/")
        assert " answered 401 Unauthorized with " in line
        assert wrong not in result.output and "Wr0ng" not in line
        assert not path.exists() or not HudiTable.open(str(path)).completed_commits()
    assert not dead.exists()


def test_kafka_security_settings_reach_the_consumer(broker, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """No broker installable here takes SASL/PLAIN logins (Tansu offers SCRAM-SHA-512
    only), so the settings are shown to reach librdkafka by what it does with them: the
    plain broker refuses its SASL handshake, in one line naming broker and protocol."""
    topic = f"pg.public.items_{uuid.uuid4().hex[:6]}"
    broker.create_topic(topic, partitions=1)
    log = PostgresLog()
    broker.produce(topic, [log.change("c", None, {"id": 1, "name": "a", "note": None, "qty": 1})])
    secret = "S3cret-pw"
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{USER}" password="{secret}";'
    )
    props = tmp_path / "kafka.properties"
    props.write_text(
        f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config={jaas}\n"
    )
    path = tmp_path / "items"
    runner = CliRunner()
    args = ["ingest", "debezium", "--table-path", str(path), "--topic", topic]
    args += ["--bootstrap-servers", broker.bootstrap_servers]
    sasl = ["-c", "security.protocol=SASL_PLAINTEXT", "-c", "sasl.mechanism=PLAIN"]
    sasl += ["-c", f"sasl.username={USER}", "-c", f"sasl.password={secret}"]
    expected = (
        f"error: cannot reach a Kafka broker at {broker.bootstrap_servers} over "
        "SASL_PLAINTEXT (sasl.mechanism PLAIN): SASL PLAIN mechanism handshake failed: "
    )
    # Kafka's settings with -c, and the Java client's sasl.jaas.config (what a
    # HoodieStreamer properties file holds) with --props.
    for extra in (sasl, ["--props", str(props)]):
        result = runner.invoke(app, [*args, *extra])
        assert result.exit_code == 2, result.output
        line = result.stderr.strip()
        assert line.startswith(expected) and "\n" not in line, line
        assert secret not in result.output
        assert not path.exists()
    # A setting librdkafka does not know (a Java client's) is refused by name.
    java = runner.invoke(app, [*args, "-c", "key.deserializer=org.example.Deserializer"])
    assert java.exit_code == 2 and java.stderr.strip() == (
        "error: the Kafka consumer refused its settings (non-hoodie.* options go to it): "
        'No such configuration property: "key.deserializer"'
    )
    assert not path.exists()


def test_a_broker_requiring_sasl_refuses_a_bad_password_in_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    secret = "not-the-password"
    path = tmp_path / "items"
    with KafkaBroker(authentication=True) as secured:
        address = secured.bootstrap_servers
        result = CliRunner().invoke(
            app,
            [
                "ingest", "debezium", "--table-path", str(path), "--topic", "dbz.public.items",
                "--bootstrap-servers", address,
                "-c", "security.protocol=SASL_PLAINTEXT", "-c", "sasl.mechanism=SCRAM-SHA-512",
                "-c", f"sasl.username={USER}", "-c", f"sasl.password={secret}",
            ],
        )  # fmt: skip
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert "\n" not in line and line.startswith(
        f"error: cannot reach a Kafka broker at {address} over SASL_PLAINTEXT "
        "(sasl.mechanism SCRAM-SHA-512): SASL authentication error: "
    ), line
    assert secret not in result.output
    assert not path.exists()


def test_reprs_and_setting_errors_never_show_a_secret() -> None:
    secrets = ["kafka-pw", "key-pw", "jaas-pw", "registry-pw", "url-pw"]
    options = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "u",
        "sasl.password": "kafka-pw",
        "ssl.key.password": "key-pw",
        "sasl.jaas.config": 'x.PlainLoginModule required username="u" password="jaas-pw";',
        "basic.auth.user.info": "u:registry-pw",
        "hoodie.streamer.schemaprovider.registry.url": "http://u:url-pw@registry:8081",
        "hoodie.streamer.source.kafka.topic": "t",
    }
    config = IngestConfig.from_options("/tmp/t", options)
    assert config.kafka.client_options is not None
    assert config.kafka.client_options["sasl.password"] == "kafka-pw"  # given to the client
    assert "basic.auth.user.info" not in config.kafka.client_options  # the registry's
    for shown in (repr(config), str(config), repr(config.kafka), repr(SchemaRegistry(
        config.registry_url, user_info=config.registry_user_info
    ))):  # fmt: skip
        assert not [s for s in secrets if s in shown], shown
    assert "http://u:***@registry:8081" in repr(config) and "'sasl.username': 'u'" in repr(config)
    for bad, message in (
        ({"basic.auth.credentials.source": "SASL_INHERIT"}, "is not supported"),
        ({"basic.auth.credentials.source": "USER_INFO"}, "needs basic.auth.user.info"),
        ({"basic.auth.user.info": "registry-pw"}, "must be user:password"),
    ):
        with pytest.raises(BadInputError, match=message) as caught:
            IngestConfig.from_options("/tmp/t", bad)
        assert "registry-pw" not in str(caught.value)
    with pytest.raises(BadInputError, match="login module OAuthBearerLoginModule") as jaas:
        from hudi_sync.debezium.kafka_source import consumer_settings

        consumer_settings({"sasl.jaas.config": 'a.OAuthBearerLoginModule required x="jaas-pw";'})
    assert "jaas-pw" not in str(jaas.value)
