"""Manifests: which base files make up a table's snapshot, published under
``<table>/.hoodie/manifest/`` for the warehouse targets to read.

``snapshot`` (full manifests and their store), ``delta`` (delta manifests on a
base snapshot), ``file_set`` (the files of a snapshot as sorted name and URI lists).
"""

from hudi_sync.manifest.delta import DeltaStore
from hudi_sync.manifest.snapshot import (
    Manifest,
    ManifestStore,
    PublishedManifest,
    build_manifest,
)

__all__ = ["DeltaStore", "Manifest", "ManifestStore", "PublishedManifest", "build_manifest"]
