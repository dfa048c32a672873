"""Keeping secret values out of messages: every form a secret can take in one.

A client library's error may quote a secret as it was sent, not as it was given: inside
a SQL string literal (quotes doubled, backslashes escaped), URL-encoded, JSON-escaped or
as a Python repr. Scrubbing only the raw value leaks a secret holding ``'`` or ``\\``
in its escaped form, so ``scrub`` removes each form.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

MASK = "***"


def secret_forms(secret: str) -> set[str]:
    """``secret`` as it may appear in a message: raw, in SQL string literals (quotes
    doubled or backslash-escaped, backslashes doubled), URL-encoded, JSON-escaped and
    Python-repr-escaped (each without its enclosing quotes)."""
    if not secret:
        return set()
    doubled_backslash = secret.replace("\\", "\\\\")
    forms = {
        secret,
        secret.replace("'", "''"),
        doubled_backslash.replace("'", "''"),
        doubled_backslash.replace("'", "\\'"),
        secret.replace('"', '""'),
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
        repr(secret + '"')[1:-2],  # the repr that escapes single quotes
    }
    return {f for f in forms if f}


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every form of every secret replaced by ``***`` (longest first, so a
    form containing another goes whole)."""
    forms = {form for secret in secrets for form in secret_forms(secret)}
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, MASK)
    return text
