"""Imports by name of source modules (``importlib.import_module``), and the block-local shim.

A source module imported by a computed name (``import_module(f".{name}", "pkg.models")``)
or by a constant one (``import_module("pkg")``) cannot be inlined: the closure would have to
carry every module the name could denote (for a lazy package, the whole source tree). The
block file instead routes such calls through ``_nnrag_import_module``, written into the file:
it resolves the absolute name at run time against the modules the file carries — a module
object whose attributes are the file's own definitions of that module (and, for a package,
the definitions it re-exports) — and raises ``ModuleNotFoundError`` naming the module for a
module of the sources the file carries nothing of. Other modules import as usual.

A private submodule of a source the file carries nothing of (``pkg._ext``: the last part
starts with ``_``, the test ``classify`` uses to call a missing module ``native-op``) is a
compiled extension, loaded by a module-level ``ext = load_ext("_ext", [...])`` whose
operators many blocks call only on a CUDA path. The shim imports it for real where it is
installed (located first, so that a pure-Python build of the package is not imported only to
lack it); otherwise it gives a stand-in module whose public attributes are functions raising
``ModuleNotFoundError(name="pkg._ext")`` when called, naming the module and the operator
(``hasattr`` is true for them; dunder and private names are absent as on any module). The
block then fails, as ``native-op``, at the stage that really calls the operator, and a block
whose CPU path does not call it runs. A static ``from pkg import _ext`` is not served: the
closure reports it (``native-op``, NNR503, stage ``closed``).

An operator a source's compiled extension registers with torch (``torch.ops.pkg.nms``, where
``pkg`` is a source package) is served the same way: the Python closure is complete, what
the block needs is the binary. The block file declares the distribution that provides the
namespace (its header's requirements), reads ``torch.ops.pkg`` through
``_nnrag_torch_ops("pkg", "dist")``, and gives the inlined units of ``pkg`` the ``__file__``
of the installed module, so that the original's own loading code (a library next to the
module, ``torch.ops.load_library``) finds the binary where the distribution is installed.
An operator still absent on first use makes the installed package load it, as importing the
original does; failing that, calling it raises ``ModuleNotFoundError`` naming the operator
and the distribution to install (category ``native-op``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nnrag.extract.syntax import dotted, handed_strings

if TYPE_CHECKING:
    from nnrag.extract.emit_cache import Entity
    from nnrag.index.build import Index
    from nnrag.index.symbols import Symbols
    from nnrag.model import ModuleInfo

__all__ = [
    "COMPILED",
    "MODULE_FILE",
    "SHIM",
    "TORCH_OPS",
    "ByName",
    "by_name",
    "import_by_name",
    "native_chunk",
    "native_namespaces",
    "serve_handed_names",
    "serve_imports",
    "serve_module_doc",
    "serve_module_file",
    "serve_native_ops",
    "served_imports",
    "shim_chunk",
    "shim_for",
    "shim_table",
]

SHIM = "_nnrag_import_module"
"""The block-local ``importlib.import_module`` (a name no source is expected to use)."""
COMPILED = "_nnrag_compiled_module"
"""The shim's helper for an absent private submodule of a source (a compiled extension)."""
DUNDER_SHIM = "_nnrag_dunder_import"
"""The block-local ``__import__``: the top-level package of what :data:`SHIM` gives."""
TORCH_OPS = "_nnrag_torch_ops"
"""The block-local ``torch.ops.<namespace>`` of an operator namespace of a source package."""
MODULE_FILE = "_nnrag_module_file"
"""The block-local ``__file__`` of an inlined unit of a package whose operators it needs."""
_TABLE = "_NNRAG_MODULES"
_SERVED = frozenset({"importlib.import_module", "import_module"})
_CALLS = _SERVED | {"__import__"}


@dataclass(frozen=True, slots=True)
class ByName:
    """One import by name of a module of the sources, found in a unit's syntax."""

    call: ast.Call
    module: str
    """The absolute module name (``exact``), or the constant start of a computed one
    (``pkg.models.``); empty when the start is unknown (a relative name with a computed
    package)."""
    exact: bool
    served: bool
    """Whether the block file routes the call through the shim (``import_module`` forms, and
    ``__import__`` of an absolute name; a relative ``__import__`` is left as written)."""
    below: bool = False
    """Whether the call hands out the modules below its top-level package too: ``__import__``
    returns that package, whose attributes reach the submodules the file carries."""


def by_name(tree: ast.AST, is_source: Callable[[str], bool]) -> Iterator[ByName]:
    """Every import by name in ``tree`` of a module of the sources (see :func:`import_by_name`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            found = import_by_name(node, is_source)
            if found is not None:
                yield found


def import_by_name(call: ast.Call, is_source: Callable[[str], bool]) -> ByName | None:
    """``call`` as an import by name of a module ``is_source`` claims (a constant name), or
    by a computed name that starts with a dot or with a source package; else ``None``."""
    name = dotted(call.func)
    if not call.args or name not in _CALLS:
        return None
    found = _target(call, is_source)
    if found is None:
        return None
    if name == "__import__":
        served = _absolute_dunder(call) and not found[0].startswith(".")
        return ByName(call=call, module=found[0], exact=found[1], served=served, below=True)
    return ByName(call=call, module=found[0], exact=found[1], served=name in _SERVED)


def _absolute_dunder(call: ast.Call) -> bool:
    """Whether the ``__import__`` call imports an absolute name (``level`` 0 or not given)."""
    level = call.args[4] if len(call.args) > 4 else None
    for keyword in call.keywords:
        if keyword.arg == "level":
            level = keyword.value
    return level is None or (isinstance(level, ast.Constant) and level.value == 0)


def _target(call: ast.Call, is_source: Callable[[str], bool]) -> tuple[str, bool] | None:
    arg = call.args[0]
    if isinstance(arg, ast.Constant):
        if isinstance(arg.value, str) and is_source(arg.value):
            return arg.value, True
        return None
    first: ast.expr = arg
    if isinstance(arg, ast.JoinedStr) and arg.values:
        first = arg.values[0]
    elif isinstance(arg, ast.BinOp):
        first = arg.left
    text = first.value if isinstance(first, ast.Constant) else None
    if not isinstance(text, str):
        return None
    if text.startswith("."):
        return _relative(call, text), False
    if is_source(text.split(".")[0] or "_"):
        return text, False
    return None


def _relative(call: ast.Call, text: str) -> str:
    """The absolute start of a relative computed name, when the package is a constant."""
    package = call.args[1] if len(call.args) > 1 else None
    for keyword in call.keywords:
        if keyword.arg == "package":
            package = keyword.value
    if not (isinstance(package, ast.Constant) and isinstance(package.value, str)):
        return ""
    dots = len(text) - len(text.lstrip("."))
    base = package.value.rsplit(".", dots - 1)[0] if dots > 1 else package.value
    return f"{base}.{text[dots:]}"


def serve_imports(chunk: str, is_source: Callable[[str], bool]) -> str:
    """``chunk`` with the callee of every served import by name replaced by :data:`SHIM`
    (:data:`DUNDER_SHIM` for ``__import__``).

    Called only for units whose original text has a served call (:func:`by_name`); the
    chunk may spell names otherwise after renames, so calls are matched by form: a callee
    ``import_module[_N]`` or ``importlib[_N].import_module`` that imports a module of the sources
    (:func:`import_by_name`) is taken as the one found in the original.
    """
    try:
        tree = ast.parse(chunk)
    except SyntaxError:
        return chunk
    spans: list[tuple[int, int, int, str]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func = node.func
        named = (isinstance(func, ast.Name) and func.id.startswith("import_module")) or (
            isinstance(func, ast.Attribute)
            and func.attr == "import_module"
            and isinstance(func.value, ast.Name)
            and func.value.id.startswith("importlib")  # maybe renamed: ``importlib_2``
        )
        dunder = isinstance(func, ast.Name) and func.id == "__import__"
        if not (named or dunder) or func.end_col_offset is None:
            continue
        found = import_by_name(node, is_source) if dunder else None
        if (found is not None and found.served) or (named and _target(node, is_source)):
            shim = DUNDER_SHIM if dunder else SHIM
            spans.append((func.lineno, func.col_offset, func.end_col_offset, shim))
    if not spans:
        return chunk
    lines = [line.encode() for line in chunk.splitlines(keepends=True)]
    for line, start, end, shim in sorted(spans, reverse=True):
        text = lines[line - 1]
        lines[line - 1] = text[:start] + shim.encode() + text[end:]
    return b"".join(lines).decode()


def served_imports(
    text: str, tree: Callable[[], ast.Module | None], is_source: Callable[[str], bool]
) -> list[ByName]:
    """The imports by name of source modules in a unit (its ``text``, emitted or original,
    and its ``tree``, parsed on demand) the block file serves itself."""
    parsed = tree() if "import_module" in text or "__import__" in text else None
    if parsed is None:
        return []
    return [spec for spec in by_name(parsed, is_source) if spec.served]


def shim_for(
    index: Index, sources: Iterable[str], flat: Mapping[Entity, str], served: Iterable[ByName]
) -> str:
    """The shim chunk of a block file: ``flat`` names its definitions, ``sources`` are the
    sources it inlines from, ``served`` the imports it serves."""
    from nnrag.index.symbols import symbols_for

    carried = {
        (entity[1], entity[2]): name
        for entity, name in flat.items()
        if entity[0] == "def" and entity[2]  # "": a module used as an object
    }
    specs = list(served)
    table = shim_table(index, symbols_for(index), carried, specs)
    packages = set().union(*(index.source_packages(source) for source in sources))
    return shim_chunk(table, packages, dunder=any(spec.below for spec in specs))


def shim_table(
    index: Index,
    symbols: Symbols,
    carried: Mapping[tuple[str, str], str],
    wanted: Iterable[ByName],
) -> dict[str, dict[str, str]]:
    """Module -> {attribute: flat name in the block} for every module a served import may
    name: a module the closure carries definitions of, or a package above one (with the
    carried definitions it re-exports). ``carried``: (module, name) -> flat name."""
    specs = list(wanted)
    by_module: dict[str, list[tuple[str, str]]] = {}
    for module, name in carried:
        by_module.setdefault(module, []).append((name, carried[module, name]))
    candidates: set[str] = set()
    for module in by_module:
        parts = module.split(".")
        candidates.update(".".join(parts[:size]) for size in range(1, len(parts) + 1))
    table: dict[str, dict[str, str]] = {}
    for module in sorted(candidates):
        if not any(_names(spec, module) for spec in specs):
            continue
        members = dict(by_module.get(module, ()))
        info = index.module(module)
        if info is not None and info.is_package:
            members.update(_re_exports(symbols, info, carried))
        if members:
            table[module] = dict(sorted(members.items()))
    return table


def _names(spec: ByName, module: str) -> bool:
    if spec.below:  # the top-level package it returns reaches every carried module below it
        top = spec.module.split(".", 1)[0]
        return module == top or module.startswith(top + ".")
    if spec.exact:
        return module == spec.module
    return module.startswith(spec.module)


def _re_exports(
    symbols: Symbols, info: ModuleInfo, carried: Mapping[tuple[str, str], str]
) -> Iterator[tuple[str, str]]:
    """The carried definitions of modules below package ``info`` that it exports by name."""
    below = info.module + "."
    for (module, name), flat in carried.items():
        if module.startswith(below) and symbols.lookup(info, name).key == (module, name):
            yield name, flat


def shim_chunk(
    table: Mapping[str, Mapping[str, str]], sources: Iterable[str], *, dunder: bool = False
) -> str:
    """The text of the shim: the table, then ``_nnrag_import_module`` (and, with ``dunder``,
    the block file's ``__import__``)."""
    rows = "".join(f"    {module!r}: {dict(members)!r},\n" for module, members in table.items())
    packages = tuple(sorted(set(sources)))
    return (
        f'''# nnrag: imports by name of the sources' modules resolve to what this file carries
{_TABLE} = {{
{rows}}}
_NNRAG_SOURCES = {packages!r}
_NNRAG_LOADED = {{}}


def {SHIM}(name, package=None):
    """``importlib.import_module`` of this block file (written by nnrag).

    A module of the block's sources is a module object whose attributes are the definitions
    this file carries from it; one the file carries nothing of raises ModuleNotFoundError,
    unless it is private (a compiled extension, ``pkg._ext``: see {COMPILED}).
    Any other module is imported as usual.
    """
    import importlib
    import importlib.util
    import types

    absolute = importlib.util.resolve_name(name, package) if name.startswith(".") else name
    if absolute in _NNRAG_LOADED:
        return _NNRAG_LOADED[absolute]
    members = {_TABLE}.get(absolute)
    if members is None and any(key.startswith(absolute + ".") for key in {_TABLE}):
        members = {{}}  # a package above carried modules: its submodules are attributes
    if members is None:
        if absolute.partition(".")[0] in _NNRAG_SOURCES:
            if "." in absolute and absolute.rpartition(".")[2].startswith("_"):
                _NNRAG_LOADED[absolute] = {COMPILED}(absolute)
                return _NNRAG_LOADED[absolute]
            raise ModuleNotFoundError(
                f"No module named {{absolute!r}} in this block file: nnrag carries only the "
                "modules the block reaches",
                name=absolute,
            )
        return importlib.import_module(absolute)
    module = types.ModuleType(absolute)

    def __getattr__(attr):
        child = f"{{absolute}}.{{attr}}"
        if child in {_TABLE} or any(key.startswith(child + ".") for key in {_TABLE}):
            return {SHIM}(child)
        flat = members.get(attr)
        if flat is None or flat not in globals():
            raise AttributeError(
                f"module {{absolute!r}} has no attribute {{attr!r}} in this block file: nnrag "
                "carries only the definitions the block reaches"
            )
        return globals()[flat]

    module.__getattr__ = __getattr__
    _NNRAG_LOADED[absolute] = module
    return module
'''
        + _COMPILED
        + (_DUNDER if dunder else "")
    )


_COMPILED = f'''

def {COMPILED}(name):
    """A compiled extension of a source this file carries nothing of (written by nnrag): the
    installed one where it is found, else a stand-in whose public attributes are functions
    raising ModuleNotFoundError when called: the block fails where it calls the operator."""
    import importlib
    import importlib.machinery
    import importlib.util
    import sys
    import types

    top, *below = name.split(".")
    spec = None if top in sys.modules else importlib.util.find_spec(top)
    for depth in range(1, len(below) + 1):  # located without importing the packages above
        path = None if spec is None else spec.submodule_search_locations
        found = ".".join([top, *below[:depth]])
        spec = None if path is None else importlib.machinery.PathFinder.find_spec(found, path)
    reason = "is not installed"
    if top in sys.modules or spec is not None:
        try:
            return importlib.import_module(name)
        except Exception as error:  # a build that does not load: its calls say why
            reason = f"does not load ({{type(error).__name__}}: {{error}})"
    module = types.ModuleType(name, f"stand-in for the absent compiled extension {{name!r}}")

    def __getattr__(attr):
        if attr.startswith("_"):
            raise AttributeError(f"module {{name!r}} has no attribute {{attr!r}}")

        def operator(*args, **kwargs):
            raise ModuleNotFoundError(
                f"{{name}}.{{attr}}: compiled extension {{name!r}} {{reason}}; the block file "
                "deferred the import to this first call",
                name=name,
            )

        operator.__name__ = operator.__qualname__ = attr
        setattr(module, attr, operator)
        return operator

    module.__getattr__ = __getattr__
    return module
'''


_DUNDER = f'''

def {DUNDER_SHIM}(name, globals=None, locals=None, fromlist=(), level=0):
    """``__import__`` of this block file (written by nnrag), for absolute names: the module
    as {SHIM} gives it with a ``fromlist``, else its top-level package."""
    module = {SHIM}(name)
    return module if fromlist else {SHIM}(name.partition(".")[0])
'''


# --------------------------------------------------------------------------- torch.ops


def _ops_namespace(node: ast.AST) -> str | None:
    """``ns`` of an expression ``torch.ops.ns`` (``torch`` maybe renamed: ``torch_2``)."""
    if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)):
        return None
    root = node.value.value
    if node.value.attr != "ops" or not isinstance(root, ast.Name):
        return None
    if root.id == "torch" or (root.id.startswith("torch_") and root.id[6:].isdigit()):
        return node.attr
    return None


def _parsed(chunk: str) -> ast.Module | None:
    try:
        return ast.parse(chunk)
    except SyntaxError:
        return None


def native_namespaces(chunk: str, is_source: Callable[[str], bool]) -> frozenset[str]:
    """Operator namespaces of source packages that ``chunk`` reads (``torch.ops.pkg``)."""
    if ".ops." not in chunk:
        return frozenset()
    tree = _parsed(chunk)
    if tree is None:
        return frozenset()
    found = {_ops_namespace(node) for node in ast.walk(tree)}
    return frozenset(name for name in found if name is not None and is_source(name))


Span = tuple[int, int, int, int, str]
"""(line, column, end line, end column, new text) of one expression; UTF-8 offsets."""


def _replaced(chunk: str, spans: Iterable[Span]) -> str:
    """``chunk`` with each one-line span replaced (a chain broken over lines is kept)."""
    lines = [line.encode() for line in chunk.splitlines(keepends=True)]
    for line, start, end_line, end, text in sorted(spans, reverse=True):
        if end_line == line:
            data = lines[line - 1]
            lines[line - 1] = data[:start] + text.encode() + data[end:]
    return b"".join(lines).decode()


def serve_native_ops(chunk: str, distributions: Mapping[str, str]) -> str:
    """``chunk`` with ``torch.ops.ns`` read through :data:`TORCH_OPS` for each namespace
    ``ns`` of ``distributions`` (namespace -> the distribution that provides it)."""
    tree = _parsed(chunk)
    if tree is None:
        return chunk
    spans: list[Span] = []
    for node in ast.walk(tree):
        name = _ops_namespace(node)
        if name is None or name not in distributions or not isinstance(node, ast.Attribute):
            continue
        if node.end_lineno is not None and node.end_col_offset is not None:
            text = f"{TORCH_OPS}({name!r}, {distributions[name]!r})"
            spans.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, text))
    return _replaced(chunk, spans) if spans else chunk


def serve_module_file(chunk: str, module: str) -> str:
    """``chunk`` (a unit of source module ``module``) with its reads of ``__file__`` through
    :data:`MODULE_FILE`: the installed module's file where its distribution is installed."""
    tree = _parsed(chunk) if "__file__" in chunk else None
    if tree is None:
        return chunk
    text = f"{MODULE_FILE}({module!r})"
    spans: list[Span] = [
        (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, text)
        for node in ast.walk(tree)
        if isinstance(node, ast.Name)
        and node.id == "__file__"
        and isinstance(node.ctx, ast.Load)
        and node.end_lineno is not None
        and node.end_col_offset is not None
    ]
    return _replaced(chunk, spans) if spans else chunk


def serve_module_doc(chunk: str, doc: str | None) -> str:
    """``chunk`` (a unit of a module whose docstring is ``doc``) with its load-time reads of
    ``__doc__`` replaced by that docstring: in the block file ``__doc__`` is the file's own
    (``_template = __doc__`` then ``_template.format(...)`` needs the module's)."""
    tree = _parsed(chunk) if "__doc__" in chunk else None
    if tree is None:
        return chunk
    spans: list[Span] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue  # run later, or in a class body whose ``__doc__`` is the class's
        if (
            isinstance(node, ast.Name)
            and node.id == "__doc__"
            and isinstance(node.ctx, ast.Load)
            and node.end_lineno is not None
            and node.end_col_offset is not None
        ):
            text = repr(doc)
            spans.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, text))
        pending.extend(ast.iter_child_nodes(node))
    return _replaced(chunk, spans) if spans else chunk


def serve_handed_names(chunk: str, flat: Mapping[str, str]) -> str:
    """``chunk`` with each string it hands on with ``__name__`` (``register("jitter",
    __name__, "JITTER")``, :func:`~nnrag.extract.syntax.handed_strings`) spelling the block
    file's name of the definition: ``flat`` maps the names of the unit's module that the
    block file renamed (``JITTER`` -> ``JITTER_2``)."""
    tree = _parsed(chunk) if "__name__" in chunk else None
    if tree is None:
        return chunk
    spans: list[Span] = []
    for handed, value, _ in handed_strings(tree):
        first, dot, rest = handed.partition(".")
        if first in flat and value.end_lineno is not None and value.end_col_offset is not None:
            text = repr(flat[first] + dot + rest)
            spans.append(
                (value.lineno, value.col_offset, value.end_lineno, value.end_col_offset, text)
            )
    return _replaced(chunk, spans) if spans else chunk


def native_chunk(*, module_file: bool) -> str:
    """The text of :data:`TORCH_OPS` (and, with ``module_file``, :data:`MODULE_FILE`)."""
    return _LOCATE + _TORCH_OPS + (_MODULE_FILE if module_file else "")


_LOCATE = '''# nnrag: the sources' compiled operators come from their installed distribution
_NNRAG_TORCH_OPS = {}


def _nnrag_locate(name):
    """The spec of installed module ``name``, located without importing it (or None)."""
    import importlib.machinery
    import importlib.util
    import sys

    top, *below = name.split(".")
    loaded = sys.modules.get(name)
    if loaded is not None:
        return getattr(loaded, "__spec__", None)
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    for depth in range(1, len(below) + 1):  # without importing the packages above
        path = None if spec is None else spec.submodule_search_locations
        found = ".".join([top, *below[:depth]])
        spec = None if path is None else importlib.machinery.PathFinder.find_spec(found, path)
    return spec
'''

_TORCH_OPS = f'''

def {TORCH_OPS}(namespace, distribution):
    """``torch.ops.<namespace>`` of this block file (written by nnrag): an operator is the one
    registered with torch; one that is not is loaded by importing the installed package (as
    importing the original does), else is a function raising ModuleNotFoundError when called,
    naming the operator and the distribution to install."""
    import importlib
    import sys
    import types

    import torch

    if namespace in _NNRAG_TORCH_OPS:
        return _NNRAG_TORCH_OPS[namespace]
    real = getattr(torch.ops, namespace)

    def __getattr__(attr):
        try:
            return getattr(real, attr)
        except (AttributeError, RuntimeError):
            pass
        reason = "is not installed"
        if namespace not in sys.modules and _nnrag_locate(namespace) is not None:
            try:
                importlib.import_module(namespace)
                return getattr(real, attr)
            except Exception as error:  # a build without the operator: its calls say why
                reason = f"does not provide it ({{type(error).__name__}}: {{error}})"

        def operator(*args, **kwargs):
            raise ModuleNotFoundError(
                f"torch.ops.{{namespace}}.{{attr}}: an operator of the compiled extension of "
                f"{{distribution!r}}, which {{reason}}; install {{distribution!r}} to run it",
                name=namespace,
            )

        operator.__name__ = operator.__qualname__ = attr
        return operator

    ops = types.ModuleType(f"torch.ops.{{namespace}}")
    ops.__getattr__ = __getattr__
    _NNRAG_TORCH_OPS[namespace] = ops
    return ops
'''

_MODULE_FILE = f'''

def {MODULE_FILE}(name):
    """``__file__`` of source module ``name`` (written by nnrag): the installed module's, where
    its distribution is installed (its compiled extension sits next to it), else this file's."""
    spec = _nnrag_locate(name)
    origin = None if spec is None else spec.origin
    return origin if isinstance(origin, str) and origin.endswith(".py") else __file__
'''
