"""Debezium ingest benchmark (P6): events from the broker into a Hudi table, against a
plain Spark append of the same rows.

``python -m benchmarks.bench_debezium [--preset small|full]``

A Tansu broker (the tests' real Kafka-protocol broker) gets a topic of 3 partitions
holding PostgreSQL change events in Debezium's JSON (``schemas.enable=false``, the
usual production setting) over ``events // 10`` keys: 10 % creates, 80 % updates, 10 %
deletes. Each measured run is a fresh process with a warmed-up Spark
session:

- **ours**: ``ingest`` in batches of ``hoodie.streamer.kafka.source.maxEvents``
  (100,000): read, decode, order and reduce, upsert with tombstones and checkpoint,
  into a Copy-on-Write table (Spark's merge, keys looked up in base files);
- **ours_mor**: the same into a Merge-on-Read table (``--table-type MERGE_ON_READ``:
  the bucket index, one log file per touched bucket, inline compaction every 5
  deltacommits);
- **ours_mor_continuous**: the same with ``--continuous`` in batches of 20,000, so that
  the run holds several compactions, which run beside the ingest (asynchronously):
  reported with the longest gap between two commits against the median gap (a
  batch's time); ``ours_mor_continuous_inline`` is the same run with the compactions
  inline (``hoodie.datasource.compaction.async.enable=false``), the stall it replaces;
  ``ours_mor`` reports the same for its inline compactions;
- **reference**: the same Kafka client reads the same messages in the same batches,
  orjson decodes the ``after`` rows, Spark appends them as parquet. No ordering, no
  deduplication, no upsert, no commit protocol: the floor of getting the rows in.

Reported: events/s, the time ratio, and peak RSS (the process tree: Python, JVM,
Spark's Python workers) at two topic sizes (the small preset's and the full one's), to
show memory stays flat as the topic grows. Results go to
``benchmarks/results/debezium.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.bench_writer import RESULTS_DIR, PeakSampler

PRESETS = {"small": [100_000], "full": [100_000, 1_000_000]}
MODES = ("ours", "ours_mor", "ours_mor_continuous", "ours_mor_continuous_inline", "reference")
BATCH = 100_000
CONTINUOUS_BATCH = 20_000
PARTITIONS = 3


def produce(servers: str, topic: str, events: int) -> None:
    """``events`` change events over ``events // 10`` keys: 10 % creates, 80 % updates
    of live keys, 10 % deletes."""
    import random

    from confluent_kafka import Producer

    from tests.debezium_events import PostgresLog

    log = PostgresLog(schemas=False)
    rng = random.Random(1)
    live: list[int] = []
    producer = Producer({"bootstrap.servers": servers, "linger.ms": 20})
    next_key = 0
    for i in range(events):
        kind = i % 10
        if kind == 0 or not live:
            key, op, before = next_key, "c", None
            live.append(next_key)
            next_key += 1
        elif kind == 9 and len(live) > 1:
            key = live.pop(rng.randrange(len(live)))
            op, before = "d", {"id": key, "name": None, "note": None, "qty": None}
        else:
            key, op, before = live[rng.randrange(len(live))], "u", None
        row = {"id": key, "name": f"name-{i}", "note": "x" * 40, "qty": i}
        message_key, value = log.change(op, before, None if op == "d" else row, commit=i % 4 == 0)
        producer.produce(topic, key=message_key, value=value)
        if i % 10_000 == 0:
            producer.poll(0)
    producer.flush()


def child(mode: str, servers: str, topic: str, table: str, events: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from hudi_sync.spark import local_session

    spark = local_session(f"bench-debezium-{mode}")
    spark.range(1000).groupBy((F.col("id") % 3).alias("g")).count().collect()  # warm up
    result: dict[str, Any] = {"mode": mode, "events": events}
    with PeakSampler() as sampler:
        started = time.monotonic()
        if mode.startswith("ours"):
            import threading

            from hudi_sync.debezium.ingest import IngestConfig, IngestSummary, ingest

            table_type = "COPY_ON_WRITE" if mode == "ours" else "MERGE_ON_READ"
            continuous = mode.startswith("ours_mor_continuous")
            options = {
                "hoodie.table.name": "bench",
                "hoodie.datasource.write.table.type": table_type,
            }
            if mode == "ours_mor_continuous_inline":
                options["hoodie.datasource.compaction.async.enable"] = "false"
            config = IngestConfig.from_options(
                table,
                options,
                bootstrap_servers=servers,
                topics=(topic,),
                max_events=CONTINUOUS_BATCH if continuous else BATCH,
                continuous=continuous,
                poll_interval_s=0.05,
            )
            commits: list[float] = []  # when each commit completed
            stop = threading.Event()

            def progress(summary: IngestSummary) -> None:
                commits.append(time.monotonic())
                if summary.events_read >= events:
                    stop.set()  # --continuous: the topic is read

            summary = ingest(spark, config, progress, stop)
            result["events_read"] = summary.events_read
            result["batches"] = summary.batches_committed
            gaps = sorted(b - a for a, b in itertools.pairwise(commits))
            result["longest_gap_seconds"] = gaps[-1] if gaps else 0.0
            result["median_gap_seconds"] = gaps[len(gaps) // 2] if gaps else 0.0
            result["compactions"] = _compactions(table) if table_type == "MERGE_ON_READ" else 0
        else:
            result["events_read"] = _plain_append(spark, servers, topic, table)
        result["seconds"] = time.monotonic() - started
    result["peak_rss_bytes"] = sampler.peak
    spark.stop()
    return result


def _compactions(path: str) -> int:
    from hudi_sync.table import HudiTable

    table = HudiTable.open(path)
    writes = table.timeline.completed_writes
    return sum(1 for i in writes if table.timeline.commit_metadata(i).compacted)


def _plain_append(spark: Any, servers: str, topic: str, out: str) -> int:
    import orjson
    import pyarrow as pa

    from hudi_sync.debezium.kafka_source import KafkaSettings, KafkaSource

    source = KafkaSource(KafkaSettings(servers, (topic,)))
    position = source.seek({})
    read = 0
    while True:
        messages, position, _ = source.read_batch(position, BATCH)
        if not messages:
            break
        read += len(messages)
        events = [orjson.loads(m.value) for m in messages if m.value is not None]
        rows = [e["after"] for e in events if e["after"] is not None]
        spark.createDataFrame(pa.Table.from_pylist(rows)).write.mode("append").parquet(out)
    source.close()
    return read


def run_child(mode: str, servers: str, topic: str, table: Path, events: int) -> dict[str, Any]:
    command = [sys.executable, "-m", "benchmarks.bench_debezium", "--child", mode, servers]
    command += [topic, str(table), str(events)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="small")
    parser.add_argument("--work", type=Path, default=RESULTS_DIR / "debezium_work")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR / "debezium.json")
    parser.add_argument("--child", nargs=5, metavar=("MODE", "SERVERS", "TOPIC", "TABLE", "N"))
    parser.add_argument(
        "--modes", default=",".join(MODES), help="comma-separated; the reference always runs"
    )
    args = parser.parse_args(argv)
    if args.child:
        mode, servers, topic, table, events = args.child
        print(json.dumps(child(mode, servers, topic, table, int(events))))
        return 0
    from tests.kafka_broker import KafkaBroker

    runs: list[dict[str, Any]] = []
    with KafkaBroker() as broker:
        for events in PRESETS[args.preset]:
            topic = f"pg.public.bench_{events}"
            broker.create_topic(topic, partitions=PARTITIONS)
            started = time.monotonic()
            produce(broker.bootstrap_servers, topic, events)
            print(f"{events:,} events produced in {time.monotonic() - started:.1f} s")
            chosen = [m for m in MODES if m in args.modes.split(",") or m == "reference"]
            for mode in chosen:
                shutil.rmtree(args.work, ignore_errors=True)
                run = run_child(mode, broker.bootstrap_servers, topic, args.work / mode, events)
                assert run["events_read"] == events, run
                runs.append(run)
                gaps = ""
                if "longest_gap_seconds" in run and mode != "ours":
                    gaps = (
                        f"  longest gap {run['longest_gap_seconds']:.2f} s against a median "
                        f"{run['median_gap_seconds']:.2f} s, {run['compactions']} compactions"
                    )
                print(
                    f"  {mode:<26} {run['seconds']:7.1f} s  {events / run['seconds']:9,.0f} "
                    f"events/s  peak {run['peak_rss_bytes'] / 2**30:.2f} GiB" + gaps
                )
    shutil.rmtree(args.work, ignore_errors=True)
    by_size: dict[int, dict[str, Any]] = {}
    for run in runs:
        by_size.setdefault(run["events"], {})[run["mode"]] = run
    report = {
        str(events): {
            mode: {
                "events_per_second": events / pair[mode]["seconds"],
                "time_ratio": pair[mode]["seconds"] / pair["reference"]["seconds"],
                "peak_rss_gib": pair[mode]["peak_rss_bytes"] / 2**30,
                "memory_ratio": pair[mode]["peak_rss_bytes"] / pair["reference"]["peak_rss_bytes"],
                "longest_gap_seconds": pair[mode].get("longest_gap_seconds"),
                "median_gap_seconds": pair[mode].get("median_gap_seconds"),
                "compactions": pair[mode].get("compactions"),
            }
            for mode in MODES
            if mode != "reference" and mode in pair
        }
        | {"reference_peak_rss_gib": pair["reference"]["peak_rss_bytes"] / 2**30}
        for events, pair in by_size.items()
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps({"report": report, "runs": runs}, indent=2))
    print("\nDebezium ingest (80 % updates) against a plain Spark append of the same rows:")
    for events, lines in report.items():
        for mode, line in lines.items():
            if not isinstance(line, dict):
                continue
            print(
                f"  {int(events):>9,} events {mode:<26}: {line['events_per_second']:9,.0f} "
                f"events/s, {line['time_ratio']:.2f}x the append's time, "
                f"{line['memory_ratio']:.2f}x its peak memory ({line['peak_rss_gib']:.2f} GiB)"
            )
    print("  targets (MOR): >= 50,000 events/s, <= 1.0x the append's time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
