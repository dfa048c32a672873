"""``hoodie.snowflake.sync.host`` with a port: the connector appends its own port to the
host it is given, so ``host:443`` became ``host:443:443`` and failed to parse (a
traceback, exit 1). A port is handed over as the connector's ``port``; anything but a
host name with an optional port is refused in one line naming the option."""

from __future__ import annotations

import pytest
import snowflake.connector

from hudi_sync.errors import BadInputError
from hudi_sync.warehouse.snowflake import SnowflakeSyncConfig
from tests.kafka_broker import free_port

PREFIX = "hoodie.snowflake.sync."
REQUIRED = {f"{PREFIX}database": "db", f"{PREFIX}schema": "s", f"{PREFIX}table_name": "t"}


def _config(host: str) -> SnowflakeSyncConfig:
    options = {**REQUIRED, f"{PREFIX}account": "acct", f"{PREFIX}host": host}
    return SnowflakeSyncConfig.from_options(options, environ={})


def test_a_host_with_a_port_reaches_the_network_through_the_connector() -> None:
    port = free_port()  # nothing listens there: the connection is refused
    config = _config(f"127.0.0.1:{port}")
    assert (config.connection["host"], config.connection["port"]) == ("127.0.0.1", str(port))
    with pytest.raises(snowflake.connector.errors.OperationalError):
        snowflake.connector.connect(
            **config.connection, user="u", password="p", protocol="http", login_timeout=2
        )
    assert _config("acct.snowflakecomputing.com").connection["host"] == (
        "acct.snowflakecomputing.com"
    )
    assert "port" not in _config("acct.snowflakecomputing.com").connection


@pytest.mark.parametrize(
    "host",
    [
        "https://acct.snowflakecomputing.com",
        "acct.snowflakecomputing.com:",
        "acct.snowflakecomputing.com:0",
        "acct.snowflakecomputing.com:70000",
        "acct.snowflakecomputing.com:https",
        "acct.snowflakecomputing.com/path",
        "acct..snowflakecomputing.com",
        "[::1]:443",
    ],
)
def test_a_host_that_is_not_a_name_and_port_is_refused_in_one_line(host: str) -> None:
    with pytest.raises(BadInputError) as refused:
        _config(host)
    message = str(refused.value)
    assert message.startswith(f"{PREFIX}host {host!r} is not a host name")
    assert "\n" not in message
