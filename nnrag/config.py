"""repos.json and run settings: parsing, validation with located messages, defaults."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nnrag.errors import ConfigError
from nnrag.model import DEFAULT_EXTERN, STAGES, BlockHints, Settings, SourceKind, SourceSpec

CACHE_ENV = "NNRAG_CACHE_DIR"
REPOS_ENV = "NNRAG_REPOS"
DEFAULT_REPOS_FILE = "repos.json"

NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.+/-]*$"
"""Source names: usable in block ids (``name:module:Class``) and pytest node ids."""

_STRINGS = {"type": "array", "items": {"type": "string", "minLength": 1}}
_HINT = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "args": {"type": "array"},
        "kwargs": {"type": "object"},
        "inputs": {"type": "array"},
        "input_kwargs": {"type": "object"},
    },
}
HINTS_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": _HINT}
REASONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {"type": "string", "minLength": 1},
}
"""``xfail`` / ``skip``: block pattern -> reason (why it is expected to fail / not run)."""
SOURCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": NAME_PATTERN},
        "path": {"type": "string", "minLength": 1},
        "git": {"type": "string", "minLength": 1},
        "url": {"type": "string", "minLength": 1},
        "ref": {"type": "string", "minLength": 1},
        "pypi": {"type": "string", "minLength": 1},
        "paths": _STRINGS,
        "include": _STRINGS,
        "exclude": _STRINGS,
        "priority": {"type": "integer"},
        "hints": HINTS_SCHEMA,
        "xfail": REASONS_SCHEMA,
        "skip": REASONS_SCHEMA,
        "description": {"type": "string"},
    },
}
"""JSON schema of one source entry (``url`` is the reference implementation's name for ``git``)."""

_KINDS: dict[str, SourceKind] = {"path": "path", "git": "git", "url": "git", "pypi": "pypi"}
_LOCATION_KEYS = tuple(_KINDS)
_ALLOWED = tuple(SOURCE_SCHEMA["properties"])
_JSON_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "array": "a list",
    "object": "an object",
}


def load_settings(
    repos_file: Path | str | None,
    *,
    cache_dir: Path | str | None = None,
    environ: Mapping[str, str] | None = None,
    **overrides: Any,
) -> Settings:
    """Settings for a run: sources from ``repos_file`` (else $NNRAG_REPOS, else ./repos.json).

    The cache folder is ``cache_dir``, else $NNRAG_CACHE_DIR, else the user cache dir.
    ``overrides`` set other :class:`~nnrag.model.Settings` fields (``depth``, ``timeout_s``, ...).
    Without any repos file the settings have no sources.
    """
    env = os.environ if environ is None else environ
    repos: Path | None = None
    if repos_file is not None:
        repos = Path(repos_file)
    elif env.get(REPOS_ENV):
        repos = Path(env[REPOS_ENV])
    elif Path(DEFAULT_REPOS_FILE).is_file():
        repos = Path(DEFAULT_REPOS_FILE)
    sources, extern = load_repos(repos) if repos is not None else ((), DEFAULT_EXTERN)
    settings = Settings(
        sources=sources,
        extern=extern,
        cache_dir=_cache_dir(cache_dir, env),
        repos_file=repos.resolve() if repos is not None else None,
    )
    known = {f.name for f in dataclasses.fields(Settings)} - {"sources", "cache_dir", "repos_file"}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ConfigError(
            f"unknown setting(s) {', '.join(unknown)}; allowed: {', '.join(sorted(known))}"
        )
    if "depth" in overrides and overrides["depth"] not in STAGES:
        raise ConfigError(
            f"unknown depth {overrides['depth']!r}; allowed: {', '.join(STAGES)}", key="depth"
        )
    return dataclasses.replace(settings, **overrides) if overrides else settings


def _cache_dir(explicit: Path | str | None, env: Mapping[str, str]) -> Path:
    if explicit is not None:
        return Path(explicit).expanduser().resolve()
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV]).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_cache_dir("nnrag", appauthor=False))


def load_sources(path: Path | str) -> tuple[SourceSpec, ...]:
    """The sources of a repos.json file, validated; relative paths against its folder."""
    return load_repos(path)[0]


def load_repos(path: Path | str) -> tuple[tuple[SourceSpec, ...], tuple[str, ...]]:
    """The sources and the ``extern`` patterns of a repos.json file, validated."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            "file not found; pass --repos FILE or set NNRAG_REPOS", file=file
        ) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read: {error}", file=file) from None
    return parse_repos(text, file=file)


def parse_sources(text: str, *, file: Path) -> tuple[SourceSpec, ...]:
    """Parse repos.json text in any of the accepted formats (see README)."""
    return parse_repos(text, file=file)[0]


def parse_repos(text: str, *, file: Path) -> tuple[tuple[SourceSpec, ...], tuple[str, ...]]:
    """Sources and ``extern`` patterns of repos.json text (any accepted format).

    ``extern`` is a top-level list (in the mapping format too: a source is an object, so a
    list under the key ``"extern"`` cannot be one); without it, :data:`DEFAULT_EXTERN`.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"malformed JSON: {error.msg}", file=file, line=error.lineno, col=error.colno
        ) from None
    entries: list[tuple[str, str | None, Any]] = []
    global_hints: tuple[BlockHints, ...] = ()
    global_marks: dict[str, tuple[tuple[str, str], ...]] = {"xfail": (), "skip": ()}
    extern = DEFAULT_EXTERN
    if isinstance(data, dict) and "extern" in data and not isinstance(data["extern"], dict):
        extern = _parse_extern(data["extern"], file=file)
        data = {key: value for key, value in data.items() if key != "extern"}
    if isinstance(data, list):
        entries = [(f"sources[{i}]", None, item) for i, item in enumerate(data)]
    elif isinstance(data, dict) and isinstance(data.get("sources"), list):
        allowed = ("sources", "extern", "hints", "xfail", "skip", "description", "$schema")
        extra = sorted(set(data) - set(allowed))
        if extra:
            raise ConfigError(
                f"unknown top-level key {extra[0]!r}; allowed: {', '.join(allowed[:-1])}",
                file=file,
                key=extra[0],
            )
        entries = [(f"sources[{i}]", None, item) for i, item in enumerate(data["sources"])]
        global_hints = _parse_hints(data.get("hints", {}), file=file, entry="top level")
        for key in ("xfail", "skip"):
            global_marks[key] = _parse_reasons(data.get(key), file=file, entry="top level", key=key)
    elif isinstance(data, dict):
        entries = [(json.dumps(name), name, item) for name, item in data.items()]
    else:
        raise ConfigError(
            'expected a list of sources, {"sources": [...]}, or an object mapping '
            f"source names to sources; got {_json_type(data)}",
            file=file,
        )
    specs = [
        _parse_source(
            item,
            file=file,
            entry=entry,
            key_name=key_name,
            global_hints=global_hints,
            global_marks=global_marks,
        )
        for entry, key_name, item in entries
    ]
    seen: dict[str, str] = {}
    for spec in specs:
        if spec.name in seen:
            raise ConfigError(
                f"duplicate source name {spec.name!r} (also used by {seen[spec.name]}); "
                "source names must be unique",
                file=file,
                entry=spec.entry,
                key="name",
            )
        seen[spec.name] = spec.entry
    return tuple(specs), extern


EXTERN_PATTERN = r"^[A-Za-z_*?\[][A-Za-z0-9_.*?\[\]!]*$"


def _parse_extern(raw: Any, *, file: Path) -> tuple[str, ...]:
    """``extern`` patterns: a dotted package (itself and its submodules) or an fnmatch glob."""
    if not isinstance(raw, list):
        raise ConfigError(
            f'must be a list of packages such as ["torch", "numpy"]; got {_json_type(raw)}',
            file=file,
            key="extern",
        )
    patterns: list[str] = []
    for i, item in enumerate(raw):
        if not isinstance(item, str) or not re.match(EXTERN_PATTERN, item.strip()):
            raise ConfigError(
                f"must be a dotted package name such as 'torch' (the package and its "
                f"submodules) or a glob such as 'mmcv._ext*'; got {json.dumps(item)}",
                file=file,
                key=f"extern.{i}",
            )
        patterns.append(item.strip())
    return tuple(dict.fromkeys(patterns))


def _parse_source(
    item: Any,
    *,
    file: Path,
    entry: str,
    key_name: str | None,
    global_hints: tuple[BlockHints, ...],
    global_marks: Mapping[str, tuple[tuple[str, str], ...]],
) -> SourceSpec:
    if not isinstance(item, dict):
        raise ConfigError(
            f"a source must be an object with 'path', 'git' or 'pypi'; got {_json_type(item)}",
            file=file,
            entry=entry,
        )
    name_hint = item.get("name", key_name)
    label = (
        entry
        if key_name is not None or not isinstance(name_hint, str)
        else (f"{entry} ({json.dumps(name_hint)})")
    )
    _validate(item, file=file, entry=label)
    present = [key for key in _LOCATION_KEYS if key in item]
    if len(present) != 1:
        raise ConfigError(
            "needs exactly one of 'path' (local folder), 'git' (clone URL) or 'pypi' "
            f"(requirement such as 'timm==1.0.31'); found {', '.join(present) or 'none'}",
            file=file,
            entry=label,
        )
    location_key = present[0]
    kind = _KINDS[location_key]
    location = str(item[location_key])
    if kind == "path":
        folder = Path(location).expanduser()
        location = str((folder if folder.is_absolute() else file.parent / folder).resolve())
    elif kind == "pypi":
        location = _check_requirement(location, file=file, entry=label)
    if "ref" in item and kind != "git":
        raise ConfigError(
            "'ref' is only allowed with 'git' (pin a pypi source with '==', a path source "
            "has no ref)",
            file=file,
            entry=label,
            key="ref",
        )
    name = item.get("name", key_name)
    if name is None:
        name = _default_name(kind, location)
    if not isinstance(name, str) or not re.match(NAME_PATTERN, name):
        raise ConfigError(
            f"source name {name!r} cannot be used in block ids: use letters, digits and "
            "'_.+/-', starting with a letter, digit or '_' (no ':' or spaces)",
            file=file,
            entry=label,
            key="name",
        )
    own_hints = _parse_hints(item.get("hints", {}), file=file, entry=label)
    return SourceSpec(
        name=name,
        kind=kind,
        location=location,
        ref=item.get("ref"),
        paths=tuple(item.get("paths", ())),
        include=tuple(item.get("include", ())),
        exclude=tuple(item.get("exclude", ())),
        priority=int(item.get("priority", 0)),
        hints=own_hints + global_hints,
        xfail=_parse_reasons(item.get("xfail"), file=file, entry=label, key="xfail")
        + global_marks["xfail"],
        skip=_parse_reasons(item.get("skip"), file=file, entry=label, key="skip")
        + global_marks["skip"],
        config_file=file.resolve(),
        entry=label,
    )


def _default_name(kind: SourceKind, location: str) -> str:
    if kind == "pypi":
        return re.split(r"[\s\[<>=!~;@]", location, maxsplit=1)[0]
    if kind == "git":
        tail = location.rstrip("/").rsplit("/", 1)[-1]
        return tail.removesuffix(".git") or "git"
    return Path(location).name or "src"


def _check_requirement(text: str, *, file: Path, entry: str) -> str:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        Requirement(text)
    except InvalidRequirement as error:
        raise ConfigError(
            f"not a valid PEP 508 requirement: {error}; write e.g. 'timm==1.0.31'",
            file=file,
            entry=entry,
            key="pypi",
        ) from None
    return text.strip()


def _parse_reasons(raw: Any, *, file: Path, entry: str, key: str) -> tuple[tuple[str, str], ...]:
    """``{"pattern": "reason", ...}`` of ``xfail`` / ``skip`` as (pattern, reason) pairs."""
    if not raw:
        return ()
    _validate(raw, file=file, entry=entry, schema=REASONS_SCHEMA, prefix=(key,))
    return tuple((str(pattern), str(reason)) for pattern, reason in raw.items())


def _parse_hints(raw: Any, *, file: Path, entry: str) -> tuple[BlockHints, ...]:
    if not raw:
        return ()
    _validate(raw, file=file, entry=entry, schema=HINTS_SCHEMA, prefix=("hints",))
    hints = []
    for pattern, hint in raw.items():
        inputs = hint.get("inputs")
        hints.append(
            BlockHints(
                pattern=pattern,
                init_args=tuple(hint.get("args", ())),
                init_kwargs=dict(hint.get("kwargs", {})),
                inputs=tuple(inputs) if inputs is not None else None,
                input_kwargs=dict(hint.get("input_kwargs", {})),
            )
        )
    return tuple(hints)


def _validate(
    item: Any,
    *,
    file: Path,
    entry: str,
    schema: Mapping[str, Any] = SOURCE_SCHEMA,
    prefix: Sequence[str] = (),
) -> None:
    error = _first_error(item, schema, ())
    if error is None:
        return
    validator, where, instance, sub = error
    path = [*prefix, *where]
    if validator == "additionalProperties":
        unexpected = sorted(set(instance) - set(sub.get("properties", {})))
        allowed = ", ".join(sub.get("properties", {}))
        key = ".".join([*path, unexpected[0]]) if unexpected else ".".join(path)
        raise ConfigError(f"unknown key; allowed: {allowed}", file=file, entry=entry, key=key)
    if validator == "type":
        expected = sub["type"]
        wanted = " or ".join(
            _JSON_TYPES.get(t, t) for t in ([expected] if isinstance(expected, str) else expected)
        )
        if path and path[-1].isdigit() and len(path) > 1:
            wanted = f"{wanted} (every item)"
        raise ConfigError(
            f"must be {wanted}, got {_json_type(instance)}",
            file=file,
            entry=entry,
            key=".".join(path),
        )
    if validator == "pattern":
        raise ConfigError(
            f"{instance!r} is not allowed: use letters, digits and '_.+/-' (no ':' or spaces)",
            file=file,
            entry=entry,
            key=".".join(path),
        )
    raise ConfigError("must not be empty", file=file, entry=entry, key=".".join(path))


_TYPE_CHECKS: dict[str, Callable[[object], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def _first_error(
    value: Any, schema: Mapping[str, Any], path: tuple[str, ...]
) -> tuple[str, tuple[str, ...], Any, Mapping[str, Any]] | None:
    """The first violation of ``schema`` (the JSON-schema subset used here), in document order.

    A small validator instead of ``jsonschema``: importing that costs more than a warm index
    run, and every xdist worker reads repos.json.
    """
    expected = schema.get("type")
    if expected and not _TYPE_CHECKS[expected](value):
        return ("type", path, value, schema)
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return ("minLength", path, value, schema)
        if "pattern" in schema and not re.search(schema["pattern"], value):
            return ("pattern", path, value, schema)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found = _first_error(item, schema["items"], (*path, str(i)))
            if found:
                return found
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        if extra is False and set(value) - set(properties):
            return ("additionalProperties", path, value, schema)
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else None)
            found = _first_error(item, sub, (*path, str(key))) if sub else None
            if found:
                return found
    return None


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"
