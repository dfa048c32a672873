"""The freshness benchmark (``benchmarks.bench_freshness``) on its DuckDB target, a few
commits: each latency runs from a real commit's completion to the moment the view shows
its new key, the reference publishes the twin's manifest of that same commit, and a
probe that never sees a commit fails the run instead of timing a wait."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.bench_freshness import (
    PRESETS,
    SITES,
    BenchmarkError,
    CompletionClock,
    Polling,
    measure_site,
    percentile,
)
from hudi_sync.manifest.snapshot import ManifestStore
from hudi_sync.table import HudiTable

PRESET = replace(PRESETS["small"], commits=2)
POLLING = Polling(step=0.01, watch_interval=0.05, timeout=30.0)


@pytest.mark.parametrize("path", ["hook", "watch"])
def test_latency_runs_from_each_commit_to_its_key_in_the_view(tmp_path: Path, path: str) -> None:
    clock = CompletionClock()
    with clock.installed(), SITES["duckdb"](tmp_path) as site:
        run = measure_site(site, path, PRESET, POLLING, clock)
        table = HudiTable.open(site.uri(run["table"]))
        instants = [i.requested_time for i in table.timeline.completed_writes]
        assert len(instants) == PRESET.commits + 1  # the first write, then the upserts
        assert set(instants) <= set(clock.times)
        assert len(run["latency_s"]) == len(run["reference_s"]) == PRESET.commits
        assert all(0 < s < POLLING.timeout for s in run["latency_s"] + run["reference_s"])
        # the sync's own end (the hook's return, watch's event), from the same completion
        assert len(run["synced_after_completion_s"]) == PRESET.commits
        assert all(s > 0 for s in run["synced_after_completion_s"])
        for commit in range(PRESET.commits):
            assert site.probe(run["table"], f"n{commit:06d}", instants[-1])
        assert not site.probe(run["table"], f"n{PRESET.commits:06d}", instants[-1])
        twin = HudiTable.open(site.uri(run["table"] + "_ref"))
        published = ManifestStore(twin).latest()
        assert published is not None
        assert published.instant == twin.latest_instant()
        assert len(twin.timeline.completed_writes) == len(instants)
    summary = run["summary"]
    assert summary["p50_s"] <= summary["p95_s"] <= max(run["latency_s"])


def test_a_commit_the_probe_never_sees_fails_the_run(tmp_path: Path) -> None:
    clock = CompletionClock()
    with clock.installed(), SITES["duckdb"](tmp_path) as site:
        blind = replace(site, probe=lambda name, key, instant: False)
        with pytest.raises(BenchmarkError, match=r"not visible after 0\.2 s"):
            measure_site(blind, "hook", PRESET, replace(POLLING, timeout=0.2), clock)


def test_percentile_interpolates_between_ranks() -> None:
    values = [float(v) for v in range(20, 0, -1)]
    assert percentile(values, 0.5) == 10.5
    assert percentile(values, 0.95) == pytest.approx(19.05)
    assert percentile([3.0], 0.95) == 3.0
