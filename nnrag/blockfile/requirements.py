"""What a block file needs installed: distributions (not import names), with the source's bounds.

An import name maps to the distribution that provides it through the installed packages'
metadata (:func:`importlib.metadata.packages_distributions`), else through a small table of
well-known names that differ (``PIL`` -> ``Pillow``), else it is taken as is. The version
specifier is the one the block's source itself declares for that distribution (its wheel's
``Requires-Dist``, its ``pyproject.toml``, its ``requirements*.txt``), not whatever happens
to be installed where the block was extracted; a distribution the source does not declare
gets no bound.

The requirements are written twice in a block file's header: as ``# requires:`` lines and as
PEP 723 inline script metadata, so ``uv run Block.py`` or ``pipx run Block.py`` can install
and run a block as it is::

    # /// script
    # dependencies = [
    #   "torch>=1.7",
    #   "Pillow",
    # ]
    # ///
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from email.parser import HeaderParser
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

KNOWN_DISTRIBUTIONS: Mapping[str, str] = {
    "PIL": "Pillow",
    "cv2": "opencv-python",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "yaml": "PyYAML",
    "attr": "attrs",
    "dateutil": "python-dateutil",
    "google": "protobuf",
    "bs4": "beautifulsoup4",
    "Crypto": "pycryptodome",
    "OpenSSL": "pyOpenSSL",
    "jwt": "PyJWT",
    "git": "GitPython",
    "serial": "pyserial",
    "magic": "python-magic",
    "fitz": "PyMuPDF",
    "torch_geometric": "torch-geometric",
    "mmcv": "mmcv",
    "lightning": "lightning",
    "pytorch_lightning": "pytorch-lightning",
}
"""Import names whose distribution is named differently, for when it is not installed."""

SCRIPT_START = "# /// script"
SCRIPT_END = "# ///"


@functools.cache
def _installed() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distribution_of(top: str) -> str:
    """The distribution that provides top-level module ``top`` (see the module docstring)."""
    found = _installed().get(top, [])
    if found:
        same = [d for d in found if canonicalize_name(d) == canonicalize_name(top)]
        return (same or sorted(found, key=str.lower))[0]
    return KNOWN_DISTRIBUTIONS.get(top, top)


@functools.cache
def declared_requirements(root: Path) -> Mapping[str, str]:
    """Canonical distribution name -> version specifier, as the source at ``root`` declares.

    Read from ``*.dist-info/METADATA`` (an unpacked wheel), ``pyproject.toml``'s
    ``[project]`` dependencies, and ``requirements*.txt``; the first declaration wins.
    Unreadable files are skipped: declarations only ever tighten what is written.
    """
    texts: list[str] = []
    for metadata in sorted(root.glob("*.dist-info/METADATA")):
        try:
            parsed = HeaderParser().parsestr(metadata.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
        texts += parsed.get_all("Requires-Dist") or []
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
        table = project.get("project", {})
        texts += list(table.get("dependencies", []))
        for extra in table.get("optional-dependencies", {}).values():
            texts += list(extra)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, AttributeError, TypeError):
        pass
    for path in sorted(root.glob("requirements*.txt")):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        texts += [line.split(" #", 1)[0].strip() for line in lines]
    declared: dict[str, str] = {}
    for text in texts:
        if not text or text.startswith(("#", "-")):
            continue
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        declared.setdefault(canonicalize_name(requirement.name), str(requirement.specifier))
    return declared


def requirements_for(tops: Iterable[str], roots: Sequence[Path] = ()) -> tuple[str, ...]:
    """PEP 508 strings for third-party top-level modules ``tops``, sorted, one per distribution.

    ``roots`` are the folders of the sources the block comes from; the first that declares a
    distribution gives its specifier.
    """
    declared: dict[str, str] = {}
    for root in roots:
        for name, specifier in declared_requirements(root).items():
            declared.setdefault(name, specifier)
    found: dict[str, str] = {}
    for top in tops:
        dist = distribution_of(top)
        found[canonicalize_name(dist)] = dist + declared.get(canonicalize_name(dist), "")
    return tuple(sorted(found.values(), key=lambda r: (r.lower(), r)))


def script_block(requires: Sequence[str]) -> list[str]:
    """PEP 723 inline metadata lines (without newlines) declaring ``requires``."""
    lines = [SCRIPT_START, "# dependencies = ["]
    lines += [f"#   {json.dumps(requirement)}," for requirement in requires]
    return [*lines, "# ]", SCRIPT_END]


_SCRIPT = re.compile(
    r"^# /// script\s*$\n(?P<content>(?:^#(?:| .*)$\n)*?)^# ///\s*$", flags=re.MULTILINE
)


def script_dependencies(text: str) -> tuple[str, ...] | None:
    """The ``dependencies`` of a file's PEP 723 ``script`` block; ``None`` without one.

    Raises ``ValueError`` when the block's TOML does not parse or ``dependencies`` is not a
    list of strings.
    """
    match = _SCRIPT.search(text)
    if match is None:
        return None
    content = "".join(
        line[2:] if line.startswith("# ") else line[1:]
        for line in match.group("content").splitlines(keepends=True)
    )
    try:
        data = tomllib.loads(content)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"the '# /// script' block is not valid TOML: {error}") from None
    dependencies = data.get("dependencies", [])
    if not isinstance(dependencies, list) or not all(isinstance(d, str) for d in dependencies):
        raise ValueError("'dependencies' of the '# /// script' block must be a list of strings")
    return tuple(dependencies)


__all__ = [
    "KNOWN_DISTRIBUTIONS",
    "declared_requirements",
    "distribution_of",
    "requirements_for",
    "script_block",
    "script_dependencies",
]
