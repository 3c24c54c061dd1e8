"""Vendoring blocks into a project: ``extract --into``, the manifest, ``refresh``."""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from nnrag.blockfile.header import body_digest, parse_header, split_header
from nnrag.check.static import definition_digests
from nnrag.errors import ConfigError, NnragError
from nnrag.model import Diagnostic, Extracted, Settings, SourceSpec
from nnrag.report import format_diagnostic

if TYPE_CHECKING:
    from nnrag.workspace import Workspace

__all__ = [
    "MANIFEST",
    "ManifestEntry",
    "VendorOutcome",
    "diff_summary",
    "manifest_entry",
    "read_manifest",
    "refresh",
    "vendor_blocks",
    "write_manifest",
]

MANIFEST = "nnrag-blocks.json"
MANIFEST_VERSION = 1

Action = Literal["written", "updated", "merged", "unchanged", "skipped", "failed"]


@dataclass(frozen=True, slots=True, kw_only=True)
class VendorOutcome:
    """What vendoring or refreshing did to one block file, and why."""

    block_id: str
    file: Path | None
    action: Action
    reason: str = ""
    """Why it was skipped or failed, or what changed."""
    diff: str = ""
    """Unified diff of the body (old -> new) when the upstream code changed."""
    problems: tuple[Diagnostic, ...] = ()

    def format(self) -> str:
        where = str(self.file) if self.file else self.block_id
        text = f"{self.action:>9}  {where}  ({self.block_id})"
        return f"{text}: {self.reason}" if self.reason else text


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestEntry:
    """One vendored block as recorded in ``nnrag-blocks.json``."""

    id: str
    file: str
    """Block file name, relative to the manifest's folder."""
    spec: str
    source: Mapping[str, Any]
    """The source's ``repos.json`` entry (kind, location, ref, paths), so refresh can rebuild it."""
    origin: str
    revision: str
    files: tuple[tuple[str, str], ...]
    """``(path, swhid)`` of the source files the block was made from."""
    license: str
    requirements: tuple[str, ...]
    digest: str
    """``sha256:<hex>`` of the body as nnrag wrote it (a different body is a hand edit)."""
    definitions: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Top-level name -> digest of its text, so ``check --pristine`` can say what was edited."""

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["files"] = [list(pair) for pair in self.files]
        data["requirements"] = list(self.requirements)
        data["source"] = dict(self.source)
        data["definitions"] = dict(self.definitions)
        return data


# --------------------------------------------------------------------------- manifest


def read_manifest(folder: Path) -> list[ManifestEntry]:
    """The entries of ``folder/nnrag-blocks.json`` (empty when there is none)."""
    path = folder / MANIFEST
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(
            f"cannot read the vendored-block manifest: {error}; fix or delete it", file=path
        ) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("blocks"), list):
        raise ConfigError("expected an object with a 'blocks' list", file=path, key="blocks")
    entries = []
    for number, item in enumerate(raw["blocks"]):
        try:
            entries.append(
                ManifestEntry(
                    id=str(item["id"]),
                    file=str(item["file"]),
                    spec=str(item.get("spec", "")),
                    source=dict(item["source"]),
                    origin=str(item.get("origin", "")),
                    revision=str(item.get("revision", "")),
                    files=tuple((str(p), str(s)) for p, s in item.get("files", [])),
                    license=str(item.get("license", "UNKNOWN")),
                    requirements=tuple(str(r) for r in item.get("requirements", [])),
                    digest=str(item["digest"]),
                    definitions={str(k): str(v) for k, v in item.get("definitions", {}).items()},
                )
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigError(
                f"malformed entry (missing or wrong {error}); allowed keys: "
                "id, file, spec, source, origin, revision, files, license, requirements, digest, "
                "definitions",
                file=path,
                entry=f"blocks[{number}]",
            ) from None
    return entries


def manifest_definitions(
    files: Sequence[Path],
) -> tuple[dict[Path, Mapping[str, str]], dict[Path, OSError]]:
    """What each definition of ``files`` was at vendoring, from their folders' manifests.

    For ``nnrag check --pristine``: files without a manifest entry are left out; a folder
    whose manifest cannot be read puts its files in the second mapping, with the error.
    """
    definitions: dict[Path, Mapping[str, str]] = {}
    unreadable: dict[Path, OSError] = {}
    manifests: dict[Path, dict[str, Mapping[str, str]]] = {}
    for path in files:
        try:
            if path.parent not in manifests:
                entries = read_manifest(path.parent)
                manifests[path.parent] = {e.file: e.definitions for e in entries}
        except OSError as error:
            unreadable[path] = error
            continue
        if path.name in manifests[path.parent]:
            definitions[path] = manifests[path.parent][path.name]
    return definitions, unreadable


def write_manifest(folder: Path, entries: Iterable[ManifestEntry]) -> Path:
    """Write ``folder/nnrag-blocks.json`` atomically, entries sorted by id."""
    from nnrag import __version__

    data = {
        "version": MANIFEST_VERSION,
        "generator": f"nnrag {__version__}",
        "blocks": [entry.to_json() for entry in sorted(entries, key=lambda e: e.id)],
    }
    path = folder / MANIFEST
    _write_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")
    return path


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(handle, 0o644)  # mkstemp makes 0600; these are files of the user's project
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def source_record(spec: SourceSpec) -> dict[str, Any]:
    """What refresh needs to rebuild a source: its repos.json entry, minus hints."""
    return {
        "name": spec.name,
        "kind": spec.kind,
        "location": spec.location,
        "ref": spec.ref,
        "paths": list(spec.paths),
    }


def source_spec(record: Mapping[str, Any], *, manifest: Path) -> SourceSpec:
    """The :class:`SourceSpec` recorded in a manifest entry."""
    kind = record.get("kind")
    if kind not in ("path", "git", "pypi") or not record.get("location"):
        raise ConfigError(
            f"source record {dict(record)!r} needs 'kind' (path, git or pypi) and 'location'",
            file=manifest,
            key="source",
        )
    return SourceSpec(
        name=str(record.get("name") or "src"),
        kind=kind,
        location=str(record["location"]),
        ref=str(record["ref"]) if record.get("ref") else None,
        paths=tuple(str(p) for p in record.get("paths") or ()),
        config_file=manifest,
        entry=f"vendored source {record.get('name')!r}",
    )


# --------------------------------------------------------------------------- extract --into


def _stem_for(block_id: str, taken: Mapping[str, str]) -> str:
    """``Class``, else ``Class_source``, else ``Class_source_module``: the first not taken."""
    source, module, name = block_id.split(":")
    source = re.sub(r"\W+", "_", source).strip("_")  # names like owner/repo are allowed
    candidates = [name, f"{name}_{source}", f"{name}_{source}_{module.replace('.', '_')}"]
    for stem in candidates:
        owner = taken.get(f"{stem}.py")
        if owner is None or owner == block_id:
            return stem
    return candidates[-1]


def _pristine(text: str, digest: str) -> bool:
    return body_digest(split_header(text)[1]) == digest


def _edited_reason(path: Path, text: str, recorded: str | None) -> str | None:
    """Why ``path`` must not be overwritten without --force, or None when it may be."""
    header = parse_header(text)
    if recorded is not None:
        actual = body_digest(split_header(text)[1])
        if actual == recorded:
            return None
        return (
            f"{path} was edited by hand since nnrag wrote it (body digest {actual[:19]}... != "
            f"{recorded[:19]}... recorded in {MANIFEST}); use --force to overwrite it"
        )
    if header is not None and _pristine(text, header.digest):
        return None
    return (
        f"{path} exists and is not a pristine nnrag block file listed in {MANIFEST}; "
        "use --force to overwrite it"
    )


def _write_block(
    extracted: Extracted,
    folder: Path,
    stem: str,
    *,
    category: str | None = None,
    code: str | None = None,
) -> tuple[Path, Path]:
    """Write the block file (``code``, default the extracted code) and its spec."""
    from nnrag.blockfile.spec import block_spec

    path = folder / f"{stem}.py"
    spec = folder / f"{stem}.spec.json"
    text = json.dumps(block_spec(extracted, category=category), indent=2, sort_keys=True)
    _write_atomic(path, extracted.code if code is None else code)
    _write_atomic(spec, text + "\n")
    return path, spec


def manifest_entry(
    extracted: Extracted, *, file: str, spec: str, record: Mapping[str, Any]
) -> ManifestEntry:
    """The manifest entry of a block file nnrag wrote from ``extracted``."""
    header = parse_header(extracted.code)
    return ManifestEntry(
        id=extracted.block.id,
        file=file,
        spec=spec,
        source=dict(record),
        origin=header.source if header else "",
        revision=header.revision if header else "",
        files=tuple((f.path, f.swhid) for f in extracted.files),
        license=header.license if header else "UNKNOWN",
        requirements=tuple(extracted.requirements),
        digest=extracted.digest,
        definitions=definition_digests(split_header(extracted.code)[1]),
    )


def _record_for(settings: Settings, source: str) -> dict[str, Any]:
    for spec in settings.sources:
        if spec.name == source:
            return source_record(spec)
    return {"name": source}


def vendor_blocks(
    workspace: Workspace, queries: Sequence[str], into: Path, *, force: bool
) -> list[VendorOutcome]:
    """Extract each block into ``into`` (block + spec) and record it in the manifest.

    A file that was edited by hand (or not written by nnrag) is never overwritten unless
    ``force``; a block that does not close is not vendored unless ``force``.
    """
    into.mkdir(parents=True, exist_ok=True)
    entries = {entry.id: entry for entry in read_manifest(into)}
    taken = {entry.file: entry.id for entry in entries.values()}
    outcomes: list[VendorOutcome] = []
    for query in queries:
        try:
            extracted = workspace.extract(query)
        except NnragError as error:
            outcomes.append(
                VendorOutcome(block_id=query, file=None, action="failed", reason=str(error))
            )
            continue
        block_id = extracted.block.id
        if not extracted.closed and not force:
            listed = "; ".join(format_diagnostic(p) for p in extracted.blocking_problems)
            outcomes.append(
                VendorOutcome(
                    block_id=block_id,
                    file=None,
                    action="skipped",
                    reason=f"the block does not close ({listed}); use --force to vendor it anyway",
                    problems=extracted.problems,
                )
            )
            continue
        previous = entries.get(block_id)
        stem = Path(previous.file).stem if previous else _stem_for(block_id, taken)
        path = into / f"{stem}.py"
        action: Action = "written"
        if path.exists():
            old = path.read_text(encoding="utf-8")
            reason = _edited_reason(path, old, previous.digest if previous else None)
            if reason and not force:
                outcomes.append(
                    VendorOutcome(block_id=block_id, file=path, action="skipped", reason=reason)
                )
                continue
            action = "unchanged" if old == extracted.code else "updated"
        category = workspace.category(extracted.block)
        _, spec = _write_block(extracted, into, stem, category=category)
        record = _record_for(workspace.settings, extracted.block.source)
        entries[block_id] = manifest_entry(extracted, file=path.name, spec=spec.name, record=record)
        taken[path.name] = block_id
        outcomes.append(
            VendorOutcome(block_id=block_id, file=path, action=action, problems=extracted.problems)
        )
    write_manifest(into, entries.values())
    return outcomes


# --------------------------------------------------------------------------- refresh


def diff_summary(old: str, new: str, *, name: str) -> tuple[str, str]:
    """``(summary, unified diff)`` of two block bodies: line counts and changed definitions."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    diff = "".join(difflib.unified_diff(old_lines, new_lines, f"a/{name}", f"b/{name}", n=2))
    added = sum(
        1 for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")
    )
    removed = sum(
        1 for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")
    )
    changed = sorted(_changed_definitions(old, new))
    summary = f"+{added} -{removed} lines"
    if changed:
        summary += f" in {', '.join(changed)}"
    return summary, diff


def _definitions(code: str) -> dict[str, str]:
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return {}
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] = ast.get_source_segment(code, node) or ""
    return found


def _changed_definitions(old: str, new: str) -> set[str]:
    before, after = _definitions(old), _definitions(new)
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def refresh(
    folder: Path,
    *,
    cache_dir: Path,
    force: bool = False,
    make_workspace: Callable[[Settings], Workspace] | None = None,
) -> list[VendorOutcome]:
    """Re-extract every vendored block of ``folder`` from its recorded source.

    Pristine files are rewritten when upstream changed; hand-edited ones are reported and
    left untouched (unless ``force``). Unreachable sources are reported, not fatal.
    ``make_workspace`` builds the workspace of one source (default: :class:`Workspace`).
    """
    if make_workspace is None:
        from nnrag.workspace import Workspace

        make_workspace = Workspace
    manifest = folder / MANIFEST
    entries = read_manifest(folder)
    if not entries:
        raise ConfigError(
            f"no vendored blocks here; vendor some with `nnrag extract ID --into {folder}`",
            file=manifest,
        )
    groups: dict[str, list[ManifestEntry]] = {}
    for entry in entries:
        groups.setdefault(json.dumps(entry.source, sort_keys=True), []).append(entry)
    updated = {entry.id: entry for entry in entries}
    outcomes: list[VendorOutcome] = []
    for key, group in groups.items():
        spec = source_spec(json.loads(key), manifest=manifest)
        workspace = make_workspace(Settings(sources=(spec,), cache_dir=cache_dir))
        try:
            workspace.build()
        except NnragError as error:
            for entry in group:
                outcomes.append(
                    VendorOutcome(
                        block_id=entry.id,
                        file=folder / entry.file,
                        action="failed",
                        reason=f"source {spec.name!r} is not reachable: {error}",
                    )
                )
            continue
        for entry in group:
            outcome, new_entry = _refresh_one(workspace, entry, folder, force=force)
            outcomes.append(outcome)
            if new_entry is not None:
                updated[entry.id] = new_entry
    write_manifest(folder, updated.values())
    return outcomes


def _refresh_one(
    workspace: Workspace, entry: ManifestEntry, folder: Path, *, force: bool
) -> tuple[VendorOutcome, ManifestEntry | None]:
    path = folder / entry.file
    try:
        extracted = workspace.extract(entry.id)
    except NnragError as error:
        return VendorOutcome(block_id=entry.id, file=path, action="failed", reason=str(error)), None
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    old_body = split_header(old)[1]
    new_body = split_header(extracted.code)[1]
    summary, diff = diff_summary(old_body, new_body, name=entry.file)
    new_entry = manifest_entry(
        extracted, file=entry.file, spec=entry.spec or f"{path.stem}.spec.json", record=entry.source
    )
    if old == extracted.code:
        return VendorOutcome(block_id=entry.id, file=path, action="unchanged"), None
    pristine = not old or _pristine(old, entry.digest)
    upstream = "upstream changed" if new_body != old_body else "provenance changed"
    if not extracted.closed and not force:
        listed = "; ".join(format_diagnostic(p) for p in extracted.blocking_problems)
        return (
            VendorOutcome(
                block_id=entry.id,
                file=path,
                action="skipped",
                reason=f"{upstream} but the new version does not close ({listed}); not written",
                diff=diff,
                problems=extracted.problems,
            ),
            None,
        )
    if not pristine and not force:
        return _merge_edited(workspace, entry, extracted, path, new_entry=new_entry)
    _write_block(extracted, folder, path.stem, category=workspace.category(extracted.block))
    detail = f"{upstream}: {summary}" if new_body != old_body else upstream
    if entry.revision and new_entry.revision != entry.revision:
        detail += f" (revision {entry.revision} -> {new_entry.revision})"
    return (
        VendorOutcome(block_id=entry.id, file=path, action="updated", reason=detail, diff=diff),
        new_entry,
    )


def _merge_edited(
    workspace: Workspace,
    entry: ManifestEntry,
    extracted: Extracted,
    path: Path,
    *,
    new_entry: ManifestEntry,
) -> tuple[VendorOutcome, ManifestEntry | None]:
    """Refresh a hand-edited block: merge upstream's changes into the user's copy, definition
    by definition (:func:`nnrag.blockfile.merge.merge3`, the base known by the manifest's
    definition digests). Written only when nothing conflicts and the result still passes the
    static check; the header's digest is upstream's, so the user's edits stay visible to
    ``check --pristine``.
    """
    from nnrag.blockfile.merge import merge3
    from nnrag.check.static import check_code

    old = path.read_text(encoding="utf-8")
    old_body, new_body = split_header(old)[1], split_header(extracted.code)[1]
    summary, diff = diff_summary(old_body, new_body, name=entry.file)

    def skipped(reason: str) -> tuple[VendorOutcome, None]:
        outcome = VendorOutcome(
            block_id=entry.id, file=path, action="skipped", reason=reason, diff=diff
        )
        return outcome, None

    if not entry.definitions:
        return skipped(
            f"edited here since nnrag wrote it and {MANIFEST} records no definition digests "
            f"to merge with ({summary} against your version); `nnrag refresh --force` overwrites it"
        )
    merged = merge3(entry.definitions, old_body, new_body, digests=definition_digests)
    if not merged.clean:
        return skipped(
            f"edited here, and upstream changed the same definitions: conflicts in "
            f"{', '.join(merged.conflicts)}; your file is left untouched (`nnrag refresh --force` "
            f"takes upstream's version; the diff below is upstream's against yours)"
        )
    header_text = split_header(extracted.code)[0]
    code = header_text + "\n" + merged.text
    if code == old:
        reason = f"edited here since nnrag wrote it (upstream unchanged; {summary} in your copy)"
        return VendorOutcome(block_id=entry.id, file=path, action="unchanged", reason=reason), None
    # not NNR203: whether a third-party package is installed here says nothing about the merge
    findings = [f for f in check_code(code, filename=str(path)) if f.code != "NNR203"]
    if findings:
        listed = "; ".join(f"line {f.line}: {f.code} {f.message}" for f in findings[:3])
        return skipped(
            f"edited here; merging upstream's changes would leave the block open ({listed}); "
            "your file is left untouched (`nnrag refresh --force` takes upstream's version)"
        )
    _write_block(
        extracted, path.parent, path.stem, category=workspace.category(extracted.block), code=code
    )
    taken = f"took upstream's {', '.join(merged.taken)}" if merged.taken else "upstream's header"
    detail = f"edited here; merged: {taken}, kept your edits"
    if entry.revision and new_entry.revision != entry.revision:
        detail += f" (revision {entry.revision} -> {new_entry.revision})"
    merged_diff = "".join(
        difflib.unified_diff(
            old_body.splitlines(keepends=True),
            merged.text.splitlines(keepends=True),
            f"a/{entry.file}",
            f"b/{entry.file}",
            n=2,
        )
    )
    outcome = VendorOutcome(
        block_id=entry.id, file=path, action="merged", reason=detail, diff=merged_diff
    )
    return outcome, new_entry
