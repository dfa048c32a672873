"""``hudi-sync`` with Snowflake emulated: the command the Snowflake page's snippets run
(``tests/test_docs_snippets.py`` puts it first on their ``PATH``).

The emulation (fakesnow behind the real connector, external tables over moto S3:
``tests/snowflake_emulation.py``) patches the connector inside one process, so it runs
in the CLI's own process here; the S3 endpoint and keys come from
``HUDI_SYNC_DOCS_S3`` (JSON storage options of the moto server).
"""

from __future__ import annotations

import json
import os

from hudi_sync.cli.app import app
from tests.snowflake_emulation import EmulatedSnowflake


def main() -> None:
    storage = json.loads(os.environ["HUDI_SYNC_DOCS_S3"])
    with EmulatedSnowflake(storage).patched():
        app(prog_name="hudi-sync")


if __name__ == "__main__":
    main()
