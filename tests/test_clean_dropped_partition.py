"""A partition ``delete_partition`` dropped leaves the metadata table's partition list
once the clean deletes its files.

Hudi's cleaner marks a partition left without a file group ``isPartitionDeleted`` in the
clean metadata, and the metadata table records that clean with a partition-list record
deleting it (``HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords``), so
readers listing through the metadata table no longer see it.
"""

from __future__ import annotations

import io
from pathlib import Path

import fastavro
from pyspark.sql import SparkSession

from hudi_sync.spark import write
from hudi_sync.spark.writing.options import PARTITIONS_TO_DELETE
from tests.frames import rows_frame
from tests.metadata_checks import listed_files, mdt_files
from tests.warehouse_rows import hudi_rs_rows

SCHEMA = "id int, p string, ts long"
OPTIONS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    "hoodie.write.table.version": 9,
    "hoodie.metadata.enable": "true",
    "hoodie.cleaner.commits.retained": 1,
}


def _write(spark: SparkSession, path: Path, rows: list[tuple[int, str, int]], **extra: object):  # type: ignore[no-untyped-def]
    frame = rows_frame(spark, rows, SCHEMA) if rows else rows_frame(spark, [], "id int")
    return write(frame, str(path), {**OPTIONS, **extra})


def test_a_cleaned_dropped_partition_leaves_the_partition_list(  # type: ignore[no-untyped-def]
    spark, tmp_path: Path
) -> None:
    path = tmp_path / "t"
    _write(spark, path, [(1, "a", 1), (2, "b", 1), (3, "c", 1)])
    _write(
        spark,
        path,
        [],
        **{"hoodie.datasource.write.operation": "delete_partition"},
        **{PARTITIONS_TO_DELETE: "b"},
    )
    partitions, _ = mdt_files(path)
    assert "p=b" in partitions  # its files stay until the clean deletes them
    cleaned = None
    for ts in (2, 3):
        result = _write(spark, path, [(1, "a", ts)])
        cleaned = cleaned or result.clean_instant
    assert cleaned is not None
    partitions, files = mdt_files(path)
    assert partitions == ["p=a", "p=c"] == sorted(files)
    assert files == listed_files(path)
    assert sorted(r["id"] for r in hudi_rs_rows(str(path)).to_pylist()) == [1, 3]
    (clean_file,) = (path / ".hoodie" / "timeline").glob(f"{cleaned}_*.clean")
    (record,) = list(fastavro.reader(io.BytesIO(clean_file.read_bytes())))
    marks = {p: m["isPartitionDeleted"] for p, m in record["partitionMetadata"].items()}
    assert marks["p=b"] is True
    assert not any(marked for p, marked in marks.items() if p != "p=b")
