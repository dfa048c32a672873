"""Checks before an object store is first used: its options, its credentials, its endpoint.

The stores' clients fail late and slowly: s3fs passes an unknown option to botocore's
session (a ``TypeError`` at the first read) and gcsfs ignores one; gcsfs without
credentials falls back to anonymous access and retries every refused or unanswered
request six times with backoff (some 50 s); google-auth probes the GCE metadata server
three times, 3 s each, before it says there are no credentials. These checks turn each
into one line in seconds, naming the table URI and the option at fault.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import os
import socket
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from hudi_sync.errors import BadInputError, StorageAccessError, StorageUnreachableError

# Options fsspec itself takes for every file system (its instance cache and DirCache).
_FSSPEC_OPTIONS = frozenset(
    {"skip_instance_cache", "use_listings_cache", "listings_expiry_time", "max_paths"}
)
# How long an endpoint or google-auth's credential lookup may take before a first use fails.
PROBE_SECONDS = 5.0
# A client may reach its endpoint through a proxy that a direct probe would not use.
_PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")
_GCS_SCHEMES = ("gs", "gcs")
_S3_SCHEMES = ("s3", "s3a")
_reached: set[tuple[str, int]] = set()  # endpoints answered once: later failures are retried
_google_credentials_found = False


@functools.cache
def accepted_options(fs_class: type) -> frozenset[str]:
    """The option names a file system class takes: the named parameters of every
    ``__init__`` in its ancestry, fsspec's own, and (s3fs) botocore session's, which
    s3fs passes its other options to."""
    names = set(_FSSPEC_OPTIONS)
    for klass in fs_class.__mro__:
        init = klass.__dict__.get("__init__")
        if init is not None:
            names.update(_parameters(init))
    if fs_class.__module__.startswith("s3fs"):
        from aiobotocore.session import AioSession

        names.update(_parameters(AioSession.__init__))
    return frozenset(names)


def _parameters(function: Any) -> list[str]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters if p.kind in kinds and p.name != "self"]


@functools.cache
def nested_options(fs_class: type) -> dict[str, frozenset[str]]:
    """The keys of the options that are themselves mappings, where known: s3fs's
    ``client_kwargs`` (botocore's ``create_client``) and ``config_kwargs`` (its ``Config``)."""
    if not fs_class.__module__.startswith("s3fs"):
        return {}
    import botocore.session
    from botocore.config import Config

    client = set(_parameters(botocore.session.Session.create_client)) - {"service_name"}
    return {"client_kwargs": frozenset(client), "config_kwargs": frozenset(Config.OPTION_DEFAULTS)}


def check_options(protocol: str, fs_class: type, options: Mapping[str, Any]) -> None:
    """Refuse an option the file system does not take (s3fs fails on it late, gcsfs and
    the local file system ignore it), naming the closest one it takes."""
    _check(protocol, "", options, accepted_options(fs_class))
    for name, known in nested_options(fs_class).items():
        inner = options.get(name)
        if isinstance(inner, Mapping):
            _check(protocol, f"{name}.", inner, known)


def _check(protocol: str, parent: str, options: Mapping[str, Any], known: frozenset[str]) -> None:
    for key in options:
        if key in known:
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1)
        hint = f"; did you mean {parent + close[0]!r}?" if close else ""
        raise BadInputError(f"storage option {parent + key!r} is not one {protocol}:// takes{hint}")


def preflight(protocol: str, uri: str, options: Mapping[str, Any]) -> None:
    """Before an object store's first use: GCS credentials found (when none are given as
    options and no emulator is named), and the store's endpoint answering a TCP connect
    (Cloud Storage's or the one given; AWS's name only resolved)."""
    if protocol in _GCS_SCHEMES:
        endpoint = options.get("endpoint_url") or _emulator()
        if options.get("token") is None and not endpoint:
            _require_google_credentials(uri)
        _probe(uri, endpoint or "https://storage.googleapis.com")
    elif protocol in _S3_SCHEMES:
        client = options.get("client_kwargs")
        endpoint = (
            options.get("endpoint_url")
            or (client.get("endpoint_url") if isinstance(client, Mapping) else None)
            or os.environ.get("AWS_ENDPOINT_URL_S3")
            or os.environ.get("AWS_ENDPOINT_URL")
        )
        # AWS's own endpoint depends on the region and may be reached through a VPC
        # endpoint: only its name is resolved (offline, botocore retries for some 15 s)
        _probe(uri, endpoint or "https://s3.amazonaws.com", connect=bool(endpoint))


def _emulator() -> str | None:
    host = os.environ.get("STORAGE_EMULATOR_HOST", "")
    return None if host in ("", "default") else host


def _require_google_credentials(uri: str) -> None:
    """google-auth's lookup of application-default credentials, bounded: offline its
    metadata-server probe alone takes some 10 s; without credentials gcsfs would go on
    anonymously and retry each refused request."""
    global _google_credentials_found
    if _google_credentials_found:
        return
    import google.auth
    import google.auth.exceptions

    outcome: list[BaseException | None] = []

    def lookup() -> None:
        try:
            google.auth.default()
            outcome.append(None)
        except google.auth.exceptions.GoogleAuthError as exc:
            outcome.append(exc)

    worker = threading.Thread(target=lookup, daemon=True, name="hudi_sync-google-credentials")
    worker.start()
    worker.join(PROBE_SECONDS)
    if outcome and outcome[0] is None:
        _google_credentials_found = True
        return
    reason = (
        " ".join(str(outcome[0]).split()).split(". ")[0]
        if outcome
        else f"no answer from the GCE metadata server within {PROBE_SECONDS:g} s"
    )
    raise StorageAccessError(
        f"{uri}: no usable credentials for the object store ({reason}); set "
        "GOOGLE_APPLICATION_CREDENTIALS or run 'gcloud auth application-default login', "
        "or pass -o token=anon for a public bucket"
    )


def _probe(uri: str, endpoint: str, connect: bool = True) -> None:
    """One TCP connect to the endpoint (only its name resolved unless ``connect``), once
    per process while it answers, unless a proxy is configured: a store that cannot be
    reached fails now, not after the client's retries."""
    if any(os.environ.get(name) for name in _PROXY_VARIABLES):
        return
    parts = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
    host = parts.hostname
    if not host:
        return
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise BadInputError(f"{uri}: the store's endpoint {endpoint!r} has a bad port") from None
    if (host, port) in _reached:
        return
    try:
        if connect:
            socket.create_connection((host, port), timeout=PROBE_SECONDS).close()
        else:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        reason = f"cannot resolve {host}: {exc.strerror or exc}"
    except TimeoutError:
        reason = f"no answer from {host}:{port} within {PROBE_SECONDS:g} s"
    except OSError as exc:
        reason = f"{host}:{port}: {exc.strerror or exc}"
    else:
        _reached.add((host, port))
        return
    raise StorageUnreachableError(f"{uri}: the object store did not answer ({reason})")
