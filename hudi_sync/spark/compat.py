"""The one place that knows which PySpark line is running (3.5, 4.0–4.3).

Every API that differs between Spark lines is wrapped here, so the writer, the reader and
the data source call one function and never test a version themselves."""

from __future__ import annotations

import pyspark


def spark_line() -> tuple[int, int]:
    """The running PySpark's (major, minor), e.g. ``(4, 1)``."""
    major, minor = pyspark.__version__.split(".")[:2]
    return int(major), int(minor)
