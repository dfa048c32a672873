"""Self-test of the S3/GCS server fixtures: upload a small tree, read it back through fsspec."""

from __future__ import annotations

import posixpath
from pathlib import Path

import fsspec
import hudi
import pytest

from tests.fixture_tables import fixture_tables, unpack
from tests.objectstores import GcsStore, ObjectStore

TREE: dict[str, bytes] = {
    ".hoodie/hoodie.properties": b"hoodie.table.name=trips\nhoodie.table.type=MERGE_ON_READ\n",
    ".hoodie/20240101000000000.deltacommit": b'{"partitionToWriteStats": {}}',
    ".hoodie/metadata/files/.files-0000-0_00000000000000000.log.1_0-0-0": b"\x00log",
    "city=sf/.hoodie_partition_metadata": b"#partition metadata\npartitionDepth=1\n",
    "city=sf/.abc_123.log.1_0-1-2": b"\x00\x01\xfe\xff" * 64,
    "city=sf/abc_123_0-1-2_20240101000000000.parquet": b"PAR1" + bytes(range(256)) + b"PAR1",
    "city=sf/empty.bin": b"",
    "city=new york/name with space+plus.txt": b"spaces",
    "README": b"top-level file",
}
IGNORED: dict[str, bytes] = {
    "__MACOSX/._README": b"resource fork",
    "city=sf/__MACOSX/._empty.bin": b"resource fork",
}


def _write_tree(base: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        path = base / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return base


def _directories(keys: list[str]) -> dict[str, set[str]]:
    """Map every directory ("" for the top) to the names of its direct children."""
    children: dict[str, set[str]] = {}
    for key in keys:
        parts = key.split("/")
        for depth in range(len(parts)):
            children.setdefault("/".join(parts[:depth]), set()).add(parts[depth])
    return children


@pytest.fixture(params=["s3_server", "gcs_server"])
def store(request: pytest.FixtureRequest) -> ObjectStore:
    """Each object store in turn."""
    result: ObjectStore = request.getfixturevalue(request.param)
    return result


@pytest.mark.parametrize("prefix", ["", "warehouse/trips"])
def test_upload_and_read_back(store: ObjectStore, tmp_path: Path, prefix: str) -> None:
    local = _write_tree(tmp_path, {**TREE, **IGNORED})
    bucket = store.make_bucket()
    url = store.upload_dir(local, bucket, prefix)
    assert url == f"{store.scheme}://{bucket}" + (f"/{prefix}" if prefix else "")

    fs, base = fsspec.core.url_to_fs(url, **store.storage_options)
    found = sorted(posixpath.relpath(p, base) for p in fs.find(base))
    assert found == sorted(TREE)
    for rel, data in TREE.items():
        path = f"{base}/{rel}"
        assert fs.cat_file(path) == data
        info = fs.info(path)
        assert (info["type"], info["size"]) == ("file", len(data))
        with fs.open(path, "rb") as handle:
            assert handle.read() == data
    for rel, names in _directories(sorted(TREE)).items():
        path = f"{base}/{rel}" if rel else base
        if rel or prefix:
            assert fs.info(path)["type"] == "directory"
        assert {posixpath.basename(p.rstrip("/")) for p in fs.ls(path)} == names
    assert sorted(fs.glob(f"{base}/*/.hoodie_partition_metadata")) == [
        f"{base}/city=sf/.hoodie_partition_metadata"
    ]
    with fsspec.open(f"{url}/.hoodie/hoodie.properties", "rb", **store.storage_options) as handle:
        assert handle.read() == TREE[".hoodie/hoodie.properties"]


def test_uncached_fs_sees_later_uploads(store: ObjectStore, tmp_path: Path) -> None:
    bucket = store.make_bucket()
    store.upload_dir(_write_tree(tmp_path / "a", {"t/one": b"1"}), bucket)
    fs = store.fs()
    assert fs.ls(f"{bucket}/t") == [f"{bucket}/t/one"]
    store.upload_dir(_write_tree(tmp_path / "b", {"t/two": b"2"}), bucket)
    assert fs.ls(f"{bucket}/t") == [f"{bucket}/t/one", f"{bucket}/t/two"]


def test_gcs_root_holds_objects(gcs_server: GcsStore, tmp_path: Path) -> None:
    bucket = gcs_server.make_bucket()
    gcs_server.upload_dir(_write_tree(tmp_path, TREE), bucket, "p")
    assert (gcs_server.root / bucket / "p/.hoodie/hoodie.properties").read_bytes() == TREE[
        ".hoodie/hoodie.properties"
    ]


def _file_slices(uri: str, options: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    builder = hudi.HudiTableBuilder.from_base_uri(uri)
    if options:
        builder = builder.with_storage_options(options)
    slices = builder.build().get_file_slices()
    return sorted((s.partition_path, s.file_id, s.base_file_name) for s in slices)


def test_hudi_rs_reads_uploaded_table(store: ObjectStore, tmp_path: Path) -> None:
    table = next(t for t in fixture_tables() if t.name.endswith("cow/v6_nonpartitioned"))
    local = unpack(table, tmp_path)
    url = store.upload_dir(local, store.make_bucket(), f"tables/{local.name}")
    expected = _file_slices(str(local))
    assert expected
    assert _file_slices(url, store.object_store_options) == expected
