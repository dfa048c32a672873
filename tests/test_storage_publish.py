"""``Location.write_file``: whole-file publication, and the conditional create that lets
exactly one of several writers publish a name, on local disk, moto S3 and
fake-gcs-server (both servers honour the preconditions real S3 and GCS use)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hudi_sync.storage import Location, open_location

RACERS = 8


def _location(store_name: str, request: pytest.FixtureRequest, tmp_path: Path) -> Location:
    if store_name == "local":
        return open_location(str(tmp_path / "t"))
    store = request.getfixturevalue(store_name)
    return open_location(f"{store.scheme}://{store.make_bucket()}/t", store.storage_options)


@pytest.mark.parametrize("store_name", ["local", "s3_server", "gcs_server"])
def test_exactly_one_exclusive_writer_publishes_a_name(
    store_name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    location = _location(store_name, request, tmp_path)
    path = location.join(".hoodie", "timeline", "20261123000000000_20261123000001000.commit")
    if location.is_local:
        Path(path).parent.mkdir(parents=True)
    start = threading.Barrier(RACERS)
    won: list[int] = []
    refused: list[int] = []

    def race(writer: int) -> None:
        start.wait()
        try:
            location.write_file(path, f"writer {writer}".encode(), exclusive=True)
        except FileExistsError:
            refused.append(writer)
        else:
            won.append(writer)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1 and sorted(won + refused) == list(range(RACERS))
    assert bytes(location.fs.cat_file(path)) == f"writer {won[0]}".encode()


@pytest.mark.parametrize("store_name", ["local", "s3_server", "gcs_server"])
def test_a_plain_write_replaces_the_whole_file(
    store_name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    location = _location(store_name, request, tmp_path)
    path = location.join("latest.json")
    if location.is_local:
        Path(path).parent.mkdir(parents=True)
    location.write_file(path, b"x" * 1000)
    location.write_file(path, b"short")
    assert bytes(location.fs.cat_file(path)) == b"short"
    with pytest.raises(FileExistsError):
        location.write_file(path, b"again", exclusive=True)
    assert bytes(location.fs.cat_file(path)) == b"short"


@pytest.mark.parametrize("store_name", ["local", "s3_server", "gcs_server"])
def test_files_written_together_are_all_published(
    store_name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    location = _location(store_name, request, tmp_path)
    files = [
        (location.join(folder, f"f{i}.parquet"), f"{folder} {i}".encode())
        for folder in ("a", "b")
        for i in range(3)
    ]
    location.write_files([(files[0][0], b"an older version")])
    location.write_files(files)
    for path, data in files:
        assert bytes(location.fs.cat_file(path)) == data
    if location.is_local:  # no temporary is left beside them
        assert sorted(p.name for p in (tmp_path / "t" / "a").iterdir()) == [
            "f0.parquet",
            "f1.parquet",
            "f2.parquet",
        ]


def test_a_batch_that_cannot_be_written_publishes_none_of_its_files(tmp_path: Path) -> None:
    location = open_location(str(tmp_path / "t"))
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "blocked").write_bytes(b"a file where a folder should be")
    files = [(location.join("logs", f"f{i}.parquet"), b"rows") for i in range(3)]
    with pytest.raises(OSError):
        location.write_files([*files, (location.join("blocked", "f.parquet"), b"rows")])
    # The files written before the failure are not published, and their temporaries are gone.
    assert list((tmp_path / "t" / "logs").iterdir()) == []
