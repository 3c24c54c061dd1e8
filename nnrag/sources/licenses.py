"""SPDX license identifiers of source trees, from package metadata or license texts."""

from __future__ import annotations

import re
from pathlib import Path

_CLASSIFIERS = {
    "MIT License": "MIT",
    "Apache Software License": "Apache-2.0",
    "BSD License": "BSD-3-Clause",
    "GNU General Public License v3 (GPLv3)": "GPL-3.0-only",
    "GNU General Public License v2 (GPLv2)": "GPL-2.0-only",
    "Mozilla Public License 2.0 (MPL 2.0)": "MPL-2.0",
    "ISC License (ISCL)": "ISC",
}
_TEXTS = (
    ("Apache-2.0", ("apache license", "version 2.0")),
    ("MIT", ("permission is hereby granted, free of charge",)),
    ("BSD-3-Clause", ("redistribution and use", "neither the name")),
    ("BSD-2-Clause", ("redistribution and use", "this list of conditions")),
    ("GPL-3.0-only", ("gnu general public license", "version 3")),
    ("GPL-2.0-only", ("gnu general public license", "version 2")),
    ("LGPL-3.0-only", ("gnu lesser general public license", "version 3")),
    ("MPL-2.0", ("mozilla public license", "2.0")),
    ("Unlicense", ("this is free and unencumbered software",)),
    ("ISC", ("permission to use, copy, modify, and/or distribute",)),
)


_ALIASES = {"MIT License": "MIT", "Apache 2.0": "Apache-2.0", "Apache License 2.0": "Apache-2.0"}
_VAGUE = frozenset({"BSD", "GPL", "LGPL", "UNKNOWN", "OTHER"})
_SPDX_LIKE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+-]*(?: (?:AND|OR|WITH) [A-Za-z0-9.+-]+)*")


def license_of(tree: Path) -> str | None:
    """SPDX id of a tree's code, where found.

    In order: ``License-Expression``; a ``License`` field that is an SPDX id; a LICENSE file's
    text; a license classifier. A vague ``License: BSD`` alone gives no answer.
    """
    metas = [*tree.glob("*.dist-info/METADATA"), *tree.glob("*/PKG-INFO"), tree / "PKG-INFO"]
    fields = [
        _metadata_fields(meta.read_text(encoding="utf-8", errors="replace"))
        for meta in metas
        if meta.is_file()
    ]
    for values in fields:
        for expression in values.get("license-expression", []):
            if expression:
                return expression
    for values in fields:
        for value in values.get("license", []):
            if value in _ALIASES:
                return _ALIASES[value]
            if _SPDX_LIKE.fullmatch(value) and value.upper() not in _VAGUE:
                return value
    for folder in (tree, *sorted(tree.glob("*.dist-info")), *sorted(tree.glob("*/"))):
        for candidate in sorted(folder.glob("*")):
            if candidate.is_file() and re.match(r"(LICEN[CS]E|COPYING)", candidate.name, re.I):
                found = license_from_text(candidate.read_text(encoding="utf-8", errors="replace"))
                if found:
                    return found
    for values in fields:
        for classifier in values.get("classifier", []):
            name = classifier.rsplit("::", 1)[-1].strip()
            if classifier.startswith("License ::") and name in _CLASSIFIERS:
                return _CLASSIFIERS[name]
    return None


def _metadata_fields(text: str) -> dict[str, list[str]]:
    """Header fields of a METADATA / PKG-INFO file, by lower-cased name."""
    values: dict[str, list[str]] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(":")
        values.setdefault(key.strip().lower(), []).append(value.strip())
    return values


def license_from_text(text: str) -> str | None:
    """SPDX id of a license text, by its distinctive phrases."""
    lowered = " ".join(text.lower().split())
    for spdx, phrases in _TEXTS:
        if all(phrase in lowered for phrase in phrases):
            return spdx
    return None
