"""``nnrag check --fix``: re-close a vendored block from the source its header names.

What is fixed, on a block file whose header names a source that can be indexed (through
the folder's ``nnrag-blocks.json``, else ``repos.json``):

- a name the user started to use that the source defines (``NNR101``) is inlined with its
  closure, exactly as extraction would have (the block is re-extracted with that name as a
  further root, so renames are extraction's own) and merged definition by definition into
  the user's file (:func:`nnrag.blockfile.merge.merge3`): the user's edits stay;
- an import of a source-package definition (``NNR202``: ``from timm.layers import DropPath``,
  ``import timm.layers as L; L.DropPath``) is replaced by the inlined definition, read by its
  flat name (:class:`nnrag.vendoring.codemods.InlineSourceImports`);
- a third-party import that is installed but not declared gets its ``# requires:`` line.

The header digest is re-stamped to the body nnrag would have written with the inlined
names, so nnrag's own edits do not count as hand edits and the user's still do (``check
--pristine``). This needs the source unchanged since vendoring (the re-extracted block must
match the header's digest); otherwise ``nnrag refresh`` comes first, and fix says so.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nnrag.blockfile.header import Header, parse_header, split_header
from nnrag.check.static import check_code, declared_imports, is_installed
from nnrag.errors import NnragError
from nnrag.model import BlockRef, Extracted, ImportBinding, Settings
from nnrag.pyscope.scopes import dotted as _dotted

if TYPE_CHECKING:
    from nnrag.index.build import Index
    from nnrag.vendor import ManifestEntry
    from nnrag.workspace import Workspace

__all__ = ["FixResult", "fix_files"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FixResult:
    """What ``--fix`` changed in one file, and what it could not fix."""

    path: Path
    changes: tuple[str, ...] = ()
    unfixable: tuple[str, ...] = ()
    """Why a finding could not be fixed (the check still reports the finding itself)."""
    text: str | None = None
    """The new file text, when something changed."""
    entry: ManifestEntry | None = None
    """The file's new manifest entry, when it is listed in one and was re-closed."""
    extracted: Extracted | None = None
    """The re-extraction (with the inlined names) the file was re-closed from."""


def fix_files(paths: Sequence[Path], *, settings: Settings) -> list[FixResult]:
    """Fix each readable block file in place (and its manifest entry); one result per path."""
    from nnrag.vendor import read_manifest, write_manifest

    sources = _Sources(settings)
    results = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            results.append(FixResult(path=path))  # the check reports it
            continue
        try:
            result = fix_text(path, text, sources=sources)
        except NnragError as error:
            result = FixResult(path=path, unfixable=(str(error),))
        if result.text is not None:
            path.write_text(result.text, encoding="utf-8")
        if result.extracted is not None and result.entry is not None:
            _write_spec(path.parent / result.entry.spec, result.extracted)
        if result.entry is not None:
            entries = {e.id: e for e in read_manifest(path.parent)}
            entries[result.entry.id] = result.entry
            write_manifest(path.parent, entries.values())
        results.append(result)
    return results


def _write_spec(spec: Path, extracted: Extracted) -> None:
    """Rewrite a block's spec for its re-extraction, keeping the category it had."""
    from nnrag.blockfile.spec import block_spec

    try:
        category = json.loads(spec.read_text(encoding="utf-8")).get("category")
    except (OSError, ValueError, AttributeError):
        category = None
    data = block_spec(extracted, category=category if isinstance(category, str) else None)
    spec.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


class _Sources:
    """The workspace of each source a block names (one per source record, built once)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._workspaces: dict[str, Workspace] = {}
        self._manifests: dict[Path, dict[str, ManifestEntry]] = {}

    def entry(self, path: Path) -> ManifestEntry | None:
        from nnrag.vendor import read_manifest

        folder = path.parent
        if folder not in self._manifests:
            self._manifests[folder] = {e.file: e for e in read_manifest(folder)}
        return self._manifests[folder].get(path.name)

    def workspace(self, path: Path, header: Header) -> Workspace:
        from nnrag.errors import ConfigError
        from nnrag.vendor import MANIFEST, source_spec
        from nnrag.workspace import Workspace

        entry = self.entry(path)
        name = header.block_id.split(":", 1)[0]
        configured = {spec.name: spec for spec in self.settings.sources}
        if entry is not None and entry.source.get("kind"):
            spec = source_spec(entry.source, manifest=path.parent / MANIFEST)
        elif name in configured:
            spec = configured[name]
        else:
            raise ConfigError(
                f"{path}: cannot fix: its source {name!r} is neither recorded in "
                f"{path.parent / MANIFEST} nor configured in repos.json; pass --repos FILE"
            )
        key = json.dumps(dataclasses.astuple(spec), default=str)
        if key not in self._workspaces:
            self._workspaces[key] = Workspace(
                Settings(sources=(spec,), cache_dir=self.settings.cache_dir)
            )
        return self._workspaces[key]


def fix_text(path: Path, text: str, *, sources: _Sources) -> FixResult:
    """The fixes of one block file's ``text`` (nothing is written here)."""
    header = parse_header(text)
    if header is None:
        return FixResult(path=path)  # the header findings say what is wrong
    _, body = split_header(text)
    findings = check_code(text, filename=str(path))
    offset = len(text.splitlines()) - len(body.splitlines())
    undefined = sorted(
        {
            name
            for f in findings
            if f.code == "NNR101" and (name := _name_at(body, f.line - offset, f.col))
        }
    )
    wants_source = any(f.code == "NNR202" for f in findings)
    if undefined or wants_source:
        return _reclose(path, text, header, undefined, sources=sources)
    return _declare(path, text, header, body, changes=())


def _name_at(body: str, line: int, col: int) -> str | None:
    lines = body.splitlines()
    if not 1 <= line <= len(lines):
        return None
    match = re.match(r"[^\W\d]\w*", lines[line - 1][max(col - 1, 0) :])
    return match.group(0) if match else None


def _reclose(
    path: Path, text: str, header: Header, undefined: Sequence[str], *, sources: _Sources
) -> FixResult:
    from nnrag.errors import BlockNotFoundError

    workspace = sources.workspace(path, header)
    try:
        block = workspace.find(header.block_id)
    except BlockNotFoundError as error:
        return FixResult(path=path, unfixable=(f"cannot re-close: {error}",))
    index = workspace.index()
    _, body = split_header(text)
    unfixable: list[str] = []
    roots: dict[tuple[str, str], str] = {}
    """(module, name) of each definition to inline -> how the file reads it (name or chain)."""
    for name in undefined:
        found = _defined(index, block, header, name)
        if isinstance(found, str):
            unfixable.append(found)
        else:
            roots[found] = name
    qualified: dict[str, tuple[str, str]] = {}
    for chain in _source_reads(body, frozenset(header.source_packages)):
        denoted = _chain_definition(index, block, chain)
        if denoted is None:
            unfixable.append(f"{chain} is not a definition in an indexed module of {block.source}")
        else:
            qualified[denoted[0]] = denoted[1]
            roots.setdefault(denoted[1], denoted[0])
    if not roots:
        return FixResult(path=path, unfixable=tuple(unfixable))
    base, earlier = _base(workspace, block, header, body)
    if base is None:
        unfixable.append(
            f"cannot re-close {path}: {block.source} changed since the block was vendored (its "
            "re-extraction does not match the header's digest); run `nnrag refresh` first"
        )
        return FixResult(path=path, unfixable=tuple(unfixable))
    return _merge(
        path,
        text,
        workspace,
        block,
        base=base,
        roots=roots,
        earlier=earlier,
        qualified=qualified,
        unfixable=unfixable,
    )


def _base(
    workspace: Workspace, block: BlockRef, header: Header, body: str
) -> tuple[Extracted | None, tuple[tuple[str, str], ...]]:
    """What nnrag wrote (its digest is the header's), and the roots an earlier fix added.

    The block as extracted; else, after an earlier ``--fix``, the block extracted with the
    source definitions the file has beyond that (the names that fix inlined).
    """
    from nnrag.blockfile.merge import chunks
    from nnrag.extract.emit import emit
    from nnrag.extract.resolve import resolve

    plain = workspace.extract(block)
    if plain.digest == header.digest:
        return plain, ()
    index = workspace.index()
    have = {c.key for c in chunks(split_header(plain.code)[1]) or ()}
    earlier = []
    for chunk in chunks(body) or ():
        kind, _, name = chunk.key.partition(" ")
        if kind in ("def", "class", "=") and chunk.key not in have and name.isidentifier():
            found = _defined(index, block, header, name)
            if not isinstance(found, str):
                earlier.append(found)
    if earlier:
        again = emit(index, resolve(index, block, also=sorted(earlier)))
        if again.digest == header.digest:
            return again, tuple(sorted(earlier))
    return None, ()


def _merge(
    path: Path,
    text: str,
    workspace: Workspace,
    block: BlockRef,
    *,
    base: Extracted,
    roots: dict[tuple[str, str], str],
    earlier: tuple[tuple[str, str], ...],
    qualified: dict[str, tuple[str, str]],
    unfixable: list[str],
) -> FixResult:
    from nnrag.blockfile.merge import merge3
    from nnrag.extract.emit import emit
    from nnrag.extract.resolve import resolve
    from nnrag.vendoring.codemods import InlineSourceImports, run_codemod

    index = workspace.index()
    closure = resolve(index, block, also=sorted({*roots, *earlier}))
    flat = {key: closure.renames.get(key, key[1]) for key in roots}
    for key, read in roots.items():
        if read == key[1] and flat[key] != read:
            unfixable.append(
                f"{read} would be inlined as {flat[key]} (its name is taken in the block); "
                f"rename your use of {read} to {flat[key]} or re-extract the block"
            )
            return FixResult(path=path, unfixable=tuple(unfixable))
    new = emit(index, closure)
    _, mine = split_header(text)
    merged = merge3(split_header(base.code)[1], mine, split_header(new.code)[1])
    if not merged.clean:
        unfixable.append(
            f"cannot re-close {path}: inlining {', '.join(sorted(set(roots.values())))} changes "
            f"definitions you edited ({', '.join(merged.conflicts)})"
        )
        return FixResult(path=path, unfixable=tuple(unfixable))
    changes = [
        f"inlined {read} from {module}"
        for (module, name), read in sorted(roots.items())
        if read == name
    ]
    imports = [label for label in merged.taken if label.startswith(("import ", "from "))]
    added = [name for name in merged.taken if name not in roots.values() and name not in imports]
    if added:
        changes.append(f"added what it needs: {', '.join(added)}")
    if imports:
        changes.append(f"imported: {'; '.join(imports)}")
    if merged.dropped:
        changes.append(f"replaced: {'; '.join(merged.dropped)}")
    body = merged.text
    if qualified:
        names = {chain: flat[key] for chain, key in qualified.items()}
        body, edits = run_codemod(body, lambda c: InlineSourceImports(c, names), filename=str(path))
        changes += edits
    new_header = parse_header(new.code)
    if new_header is None:  # nnrag wrote it: a bug
        raise NnragError(f"the re-extracted header of {block.id} does not parse")
    user_header = parse_header(text)
    kept = user_header.requires if user_header else ()
    declared = declared_imports(kept)  # the user's lines stay; new distributions are added
    requires = (*kept, *(r for r in new_header.requires if not _covers(declared, r)))
    header = dataclasses.replace(new_header, requires=requires)
    result = _declare(path, header.render() + "\n" + body, header, body, changes=tuple(changes))
    entry = None
    listed = _listed(path)
    if listed is not None:
        from nnrag.vendor import manifest_entry

        entry = manifest_entry(new, file=listed.file, spec=listed.spec, record=listed.source)
        final = parse_header(result.text or "")
        if final is not None:  # the requirements as the header now declares them
            entry = dataclasses.replace(entry, requirements=final.requires)
    unfixable += result.unfixable
    return dataclasses.replace(result, unfixable=tuple(unfixable), entry=entry, extracted=new)


def _listed(path: Path) -> ManifestEntry | None:
    from nnrag.vendor import read_manifest

    return next((e for e in read_manifest(path.parent) if e.file == path.name), None)


def _declare(
    path: Path, text: str, header: Header, body: str, *, changes: tuple[str, ...]
) -> FixResult:
    """``text`` with a ``# requires:`` line for each installed, undeclared third-party import."""
    from nnrag.extract.emit_header import external_requirements

    declared = declared_imports(header.requires)
    tops = {
        top for top in _top_imports(body) if top not in header.source_packages and is_installed(top)
    }
    bindings = [ImportBinding(name=top, module=top, attr=None) for top in sorted(tops)]
    wanted = external_requirements(bindings, exclude=frozenset(header.source_packages))
    missing = [r for r in wanted if not _covers(declared, r)]
    if missing:
        header = dataclasses.replace(header, requires=(*header.requires, *missing))
        text = header.render() + "\n" + body
        changes = (*changes, f"declared '# requires: {', '.join(missing)}'")
    if not changes:
        return FixResult(path=path)
    return FixResult(path=path, changes=changes, text=text)


def _covers(declared: frozenset[str], requirement: str) -> bool:
    return declared_imports([requirement]) <= declared


def _top_imports(body: str) -> set[str]:
    """Top-level modules of the module-level imports that always run."""
    try:
        tree = ast.parse(body)
    except (SyntaxError, ValueError):
        return set()
    tops = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            tops |= {alias.name.split(".", 1)[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            tops.add(node.module.split(".", 1)[0])
    import sys

    return {t for t in tops if t not in sys.stdlib_module_names and t != "__future__"}


def _defined(index: Index, block: BlockRef, header: Header, name: str) -> tuple[str, str] | str:
    """(module, name) of the definition ``name`` denotes in the block's source, or why not."""
    from nnrag.index.symbols import symbols_for

    symbols = symbols_for(index)
    home = index.module(block.module, prefer=block.source)
    paths = {path for path, _ in header.files}
    others = [info for info in index.modules(block.source) if info.path in paths]
    parts = block.module.split(".")
    packages = [
        index.module(".".join(parts[:n]), prefer=block.source) for n in range(len(parts) - 1, 0, -1)
    ]
    hint = ""
    # where the block was defined, the files it was made from, then its packages (re-exports)
    for info in [m for m in [home, *others, *packages] if m is not None]:
        found = symbols.lookup(info, name)
        if found.kind == "definition" and found.module is not None:
            return found.module.module, found.name
        if found.kind == "external" and found.binding is not None and not hint:
            binding = found.binding
            written = (
                f"from {binding.module} import {binding.attr}"
                if binding.attr
                else f"import {binding.module}"
            )
            if binding.name != (binding.attr or binding.module):
                written += f" as {binding.name}"
            hint = f"; {info.module} imports it: add '{written}'"
    if hint:
        return f"undefined name {name!r}: {block.source} defines no such name{hint}"
    return _defined_anywhere(index, block, name)


def _defined_anywhere(index: Index, block: BlockRef, name: str) -> tuple[str, str] | str:
    """The one module of the block's source that defines ``name`` at top level, or why not."""
    from nnrag.index.symbols import symbols_for

    symbols = symbols_for(index)
    found = sorted(
        info.module
        for info in index.modules(block.source)
        if any(
            unit.kind != "import" and not unit.type_checking
            for unit in symbols.binders(info).get(name, ())
        )
    )
    if len(found) == 1:
        return found[0], name
    if not found:
        return f"undefined name {name!r}: {block.source} defines no such name"
    listed = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
    return (
        f"undefined name {name!r}: {block.source} defines it in {len(found)} modules ({listed}); "
        f"import it from the one you mean (from <module> import {name}) and run --fix again"
    )


def _chain_definition(
    index: Index, block: BlockRef, chain: str
) -> tuple[str, tuple[str, str]] | None:
    """``(qualified prefix, (module, name))`` of the source definition a dotted name denotes."""
    from nnrag.index.symbols import symbols_for

    symbols = symbols_for(index)
    parts = chain.split(".")
    for size in range(len(parts) - 1, 0, -1):
        info = index.module(".".join(parts[:size]), prefer=block.source)
        if info is None:
            continue
        found = symbols.lookup(info, parts[size])
        if found.kind == "definition" and found.module is not None:
            return ".".join(parts[: size + 1]), (found.module.module, found.name)
    return None


def _source_reads(body: str, packages: frozenset[str]) -> list[str]:
    """Qualified names the body reads from its source packages through its imports:
    ``timm.layers.DropPath`` for ``from timm.layers import DropPath [as DP]`` and for
    ``L.DropPath`` after ``import timm.layers as L``."""
    try:
        tree = ast.parse(body)
    except (SyntaxError, ValueError):
        return []
    modules: dict[str, str] = {}  # local name -> module it binds
    found: dict[str, None] = {}
    for node in ast.walk(tree):  # lazy imports in function bodies too
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".", 1)[0] in packages:
                for alias in node.names:
                    if alias.name != "*":
                        found[f"{node.module}.{alias.name}"] = None
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".", 1)[0] in packages:
                    local = alias.asname or alias.name.split(".", 1)[0]
                    modules[local] = alias.name if alias.asname else local
    if modules:
        inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        for each in ast.walk(tree):
            if isinstance(each, ast.Attribute) and id(each) not in inner:
                chain = _dotted(each)
                if chain and chain.split(".", 1)[0] in modules:
                    root, _, rest = chain.partition(".")
                    found[f"{modules[root]}.{rest}"] = None
    return list(found)
