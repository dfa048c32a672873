"""Which ``pip install 'hudi-sync[EXTRA]'`` brings a module a command needs.

A plain install has the CLI, the table core and the DuckDB sync; PySpark, the warehouse
clients and the object-store filesystems come with extras and are imported only by the
code that needs them. When one is missing, the command says in one line which extra to
install instead of printing a traceback."""

from __future__ import annotations

from hudi_sync.errors import MissingExtraError

# Top-level module -> the extra that brings it (pyproject.toml's optional-dependencies;
# tests/test_declared_dependencies.py checks the two agree).
EXTRAS = {
    "pyspark": "spark",
    "pandas": "spark",
    "google": "bigquery",
    "requests": "bigquery",
    "snowflake": "snowflake",
    "s3fs": "s3",
    "aiobotocore": "s3",
    "botocore": "s3",
    "gcsfs": "gcs",
}


def missing_extra(exc: BaseException) -> MissingExtraError | None:
    """The one-line error for an import that failed because an extra is not installed
    (``exc`` or an error it was raised from, as fsspec's "Install s3fs" is), else None."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ModuleNotFoundError) and seen.name:
            module = seen.name.split(".")[0]
            if module in EXTRAS:
                return extra_error(module)
        seen = seen.__cause__ or seen.__context__
    return None


def extra_error(module: str, extra: str | None = None) -> MissingExtraError:
    """The error for ``module`` (a key of ``EXTRAS``) missing; ``extra`` names the one
    to install when the command needs another extra than ``EXTRAS`` says (``requests``
    comes with both the bigquery and the iceberg extras)."""
    extra = extra or EXTRAS[module]
    return MissingExtraError(
        f"this needs the {extra} extra, which is not installed (no module {module}): "
        f"pip install 'hudi-sync[{extra}]'"
    )
