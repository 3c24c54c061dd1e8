"""Golden extraction cases: tests/cases/<case>/{src/, case.json, expected.py}.

Each case indexes ``src/`` as source ``src``, extracts ``case.json``'s target and compares
the problem categories and, when the block closes, the exact emitted file. Regenerate the
expected files with ``NNRAG_UPDATE_GOLDENS=1 pytest tests/unit/test_cases.py`` and review
every changed file by eye before committing it.
"""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest

from nnrag.diagnostics import unsuppressed
from nnrag.extract.block import extract
from nnrag.index.build import Index, index_tree, index_trees
from nnrag.model import DEFAULT_EXTERN, BlockRef, Extracted, SourceSpec
from nnrag.pyscope.bindings import binds_computed_names
from nnrag.report import format_diagnostic

CASES_DIR = Path(__file__).resolve().parent.parent / "cases"
CASES = sorted(p.name for p in CASES_DIR.iterdir() if (p / "case.json").is_file())
UPDATE = os.environ.get("NNRAG_UPDATE_GOLDENS") == "1"


def load_case(name: str) -> dict[str, object]:
    data: dict[str, object] = json.loads((CASES_DIR / name / "case.json").read_text("utf-8"))
    return data


def case_index(name: str) -> Index:
    """``src/`` as source ``src``; or, when case.json lists ``sources`` (name, root folder,
    ``paths``, ``priority``) and ``extern``, every one of them as a configured source would be."""
    case = load_case(name)
    folder = CASES_DIR / name
    sources = case.get("sources")
    if not isinstance(sources, list):
        return index_tree(folder / "src", source="src")
    specs = [
        SourceSpec(
            name=entry["name"],
            kind="path",
            location=str((folder / entry.get("root", entry["name"])).resolve()),
            paths=tuple(entry.get("paths", ())),
            priority=int(entry.get("priority", 0)),
        )
        for entry in sources
    ]
    extern = case.get("extern", DEFAULT_EXTERN)
    assert isinstance(extern, (list, tuple))
    return index_trees(specs, extern=tuple(extern))


def target_block(index: Index, target: str, source: str = "src") -> BlockRef:
    """The block ``pkg.mod:Class`` of ``source`` (discovered, else built from the index)."""
    module, name = target.split(":")
    from nnrag.index.discover import discover_blocks

    for block in discover_blocks(index):
        if (block.source, block.module, block.name) == (source, module, name):
            return block
    info = index.module(module, prefer=source)
    assert info is not None, f"module {module} not in the case's {source}"
    for unit in info.units:
        for cls in unit.classes:
            if cls.name == name:
                return BlockRef(
                    source=source,
                    module=module,
                    name=name,
                    path=info.path,
                    line=cls.line,
                    docstring=cls.docstring,
                    init_signature=cls.init_signature,
                    forward_signature=cls.forward_signature,
                )
    raise AssertionError(f"class {target} not found in the case's src/")


def run_case(name: str) -> Extracted:
    case = load_case(name)
    index = case_index(name)
    source = str(case.get("target_source", "src"))
    return extract(index, target_block(index, str(case["target"]), source))


def normalized(name: str, code: str) -> str:
    """The emitted code with the machine-specific absolute paths of the case made relative."""
    return code.replace(str((CASES_DIR / name).resolve()), f"tests/cases/{name}")


@pytest.mark.parametrize("name", CASES)
def test_case(name: str) -> None:
    case = load_case(name)
    extracted = run_case(name)
    categories = sorted(p.category for p in extracted.problems)
    assert categories == case["problems"], "\n".join(map(format_diagnostic, extracted.problems))
    expected_file = CASES_DIR / name / "expected.py"
    code = normalized(name, extracted.code)
    if not extracted.closed:
        return
    if UPDATE:
        expected_file.write_text(code, encoding="utf-8")
        return
    assert expected_file.is_file(), f"no expected.py; run with NNRAG_UPDATE_GOLDENS=1 ({name})"
    assert code == expected_file.read_text("utf-8")


@pytest.mark.parametrize("name", CASES)
def test_emitted_file_compiles_and_checks_clean(name: str) -> None:
    extracted = run_case(name)
    compile(extracted.code, f"{name}.py", "exec", dont_inherit=True)
    if extracted.closed:
        checks = pytest.importorskip("nnrag.check.static")
        found = checks.check_code(extracted.code, filename=f"{name}.py")
        # as the closed stage and ``nnrag check`` read it: a line's noqa comment counts
        findings = unsuppressed(found, extracted.code.splitlines())
        assert not findings, [format_diagnostic(f, path=name) for f in findings]


def _bound(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds at module level (not inside its functions/classes)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    names: set[str] = set()
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(
            node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
        ):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
        stack.extend(ast.iter_child_nodes(node))
    return names


def _reads(stmt: ast.stmt) -> set[str]:
    """Names read, including inside string annotations (``x: "Cache | None"``)."""
    names: set[str] = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            names.add(node.id)
        annotation = node.annotation if isinstance(node, (ast.arg, ast.AnnAssign)) else None
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            annotation = node.returns
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            names |= _reads(ast.parse(annotation.value).body[0])
    return names


def _reads_namespace_constant(stmt: ast.stmt) -> bool:
    """``globals()["name"]`` in ``stmt``: what a statement that binds names by computed keys
    (a loop over another module's classes) bound."""
    return any(
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func) == "globals"
        and isinstance(node.slice, ast.Constant)
        for node in ast.walk(stmt)
    )


def _mutated(stmt: ast.stmt, writers: dict[str, set[str]]) -> set[str]:
    """Objects a statement changes at load time: ``@X.register``, a bare ``X.add(...)``, a
    bare call handed ``X`` (``fill(X)``), a call of a function that writes items of ``X``
    (``writers``: ``register("k", ...)`` filling ``_REGISTRY[alias]``), or an object
    constructed with ``parent=X`` (a child registry enters itself into its parent, which
    finds entries through it)."""
    roots: set[str] = set()
    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
        parents = [k.value for k in stmt.value.keywords if k.arg == "parent"]
        return {p.id for p in parents if isinstance(p, ast.Name)}
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        funcs = [d.func if isinstance(d, ast.Call) else d for d in stmt.decorator_list]
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        funcs = [stmt.value.func]
        given = [*stmt.value.args, *(k.value for k in stmt.value.keywords)]
        roots |= {arg.id for arg in given if isinstance(arg, ast.Name)}
    else:
        return set()
    for func in funcs:
        node = func
        if isinstance(node, ast.Name):
            roots |= writers.get(node.id, set())
        while isinstance(node, ast.Attribute):
            node = node.value
            if isinstance(node, ast.Name):
                roots.add(node.id)
    return roots


def _item_writers(units: list[ast.stmt]) -> dict[str, set[str]]:
    """Top-level function -> the module names whose items it assigns (``_REGISTRY[k] = v``)."""
    return {
        stmt.name: {
            node.value.id
            for node in ast.walk(stmt)
            if isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
        }
        for stmt in units
        if isinstance(stmt, ast.FunctionDef)
    }


def _handed(stmt: ast.stmt) -> set[str]:
    """Names a statement hands on as strings with ``__name__`` (``register("k", __name__,
    "FLAG")``: the callee reads ``FLAG`` of the module by name)."""
    return {
        arg.value.partition(".")[0]
        for node in ast.walk(stmt)
        if isinstance(node, ast.Call)
        and any(isinstance(a, ast.Name) and a.id == "__name__" for a in node.args)
        for arg in node.args
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
    }


def _patched(stmt: ast.stmt) -> set[str]:
    """Attributes a module-level ``obj.attr = value`` sets (empty for other statements)."""
    if not isinstance(stmt, ast.Assign):
        return set()
    return {t.attr for t in stmt.targets if isinstance(t, ast.Attribute)}


@pytest.mark.parametrize("name", CASES)
def test_no_bloat(name: str) -> None:
    """Every top-level definition of the emitted file is reachable from the target by reads
    (or registers, at load time, into an object that is)."""
    extracted = run_case(name)
    tree = ast.parse(extracted.code)
    units = [
        s
        for s in tree.body
        if not isinstance(s, (ast.Import, ast.ImportFrom)) and "__all__" not in _bound(s)
    ]
    binders: dict[str, list[int]] = {}
    for position, stmt in enumerate(units):
        for bound in _bound(stmt):
            binders.setdefault(bound, []).append(position)
    reached: set[int] = set()
    writers = _item_writers(units)
    todo = list(binders.get(extracted.block.name, []))
    assert todo, f"target {extracted.block.name} is not defined in the emitted file"
    while todo:
        while todo:
            position = todo.pop()
            if position in reached:
                continue
            reached.add(position)
            for read in _reads(units[position]) | _handed(units[position]):
                todo.extend(binders.get(read, []))
            if _reads_namespace_constant(units[position]):  # ``X = globals()["X"]``
                todo.extend(p for p, stmt in enumerate(units) if binds_computed_names(stmt))
            names = _bound(units[position])  # registrations into a reached object come with it
            todo.extend(p for p, stmt in enumerate(units) if _mutated(stmt, writers) & names)
        # a namespace read by a formatted key (``globals()[f"act_{name}"]``) reaches the
        # definitions whose names fit it
        keys = [
            "".join(
                re.escape(v.value) if isinstance(v, ast.Constant) else ".*"
                for v in node.slice.values
            )
            for p in reached
            for node in ast.walk(units[p])
            if isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func) == "globals"
            and isinstance(node.slice, ast.JoinedStr)
        ]
        todo.extend(
            p
            for name, positions in binders.items()
            if any(re.fullmatch(key, name) for key in keys)
            for p in positions
            if p not in reached
        )
        # a patch (``obj.attr = value``) comes with the attributes the reached code reads
        read = {n.attr for p in reached for n in ast.walk(units[p]) if isinstance(n, ast.Attribute)}
        todo.extend(p for p, stmt in enumerate(units) if p not in reached and _patched(stmt) & read)
    unreachable = [
        ast.unparse(units[p]).splitlines()[0] for p in range(len(units)) if p not in reached
    ]
    assert not unreachable, f"not reachable from the target: {unreachable}"


@pytest.mark.parametrize("name", CASES)
def test_deterministic(name: str) -> None:
    """Two extractions from two separate index builds are byte-identical."""
    assert run_case(name).code == run_case(name).code


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 15


def test_stand_in_does_not_pull_a_decorated_class_ahead_of_its_decorator_helpers() -> None:
    """The emitted file of a closure with a stand-in runs: its decorated classes come after
    the helpers their decorator calls at class creation (a NameError before the fix)."""
    code = run_case("emit_stand_in_before_decorator_helpers").code
    namespace: dict[str, object] = {"__name__": "block"}
    exec(compile(code, "block.py", "exec"), namespace)
    block = namespace["Block"]
    assert "(documented)" in (namespace["PreBase"].__doc__ or "")  # type: ignore[attr-defined]  # a class of the executed file
    assert block().forward(1) == 2  # type: ignore[operator]  # the executed file's class


def test_a_namespace_read_by_a_formatted_name_finds_every_fitting_definition() -> None:
    """The block file runs whichever fitting name the arguments build (``emulate_int4_tensor``
    and ``emulate_int8_channel``, not only the defaults' ``emulate_int8_tensor``)."""
    import torch

    namespace: dict[str, object] = {"__name__": "block"}
    code = run_case("resolve_namespace_read_by_formatted_key").code
    exec(compile(code, "block.py", "exec"), namespace)
    quant = namespace["QuantLinear"]
    for bits, method in ((8, "tensor"), (4, "tensor"), (8, "channel")):
        layer = quant(3, 2, bits=bits, method=method)  # type: ignore[operator]  # the executed file's class
        assert layer(torch.ones(1, 3)).shape == (1, 2)


def test_a_registry_a_function_fills_finds_each_setting_by_its_block_file_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The block file, imported as a module, registers the settings its block reads: the
    getter imports the module by ``__name__`` and finds each flag, the one renamed in the
    file (two modules define ``_ENABLED``) by its new name, so the block computes what the
    original computes (``x * 2``, no noise); the docstring template is the settings
    module's."""
    import importlib
    import sys

    import torch

    (tmp_path / "filled_registry_block.py").write_text(
        run_case("resolve_registry_filled_by_a_function").code
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = importlib.import_module("filled_registry_block")
        assert module.Gate()(torch.ones(2)).tolist() == [2.0, 2.0]
        assert module.__doc__.startswith("Settings of lib")
        assert module.get("noise_enabled") is False
        assert module.get("gate_enabled") is True
    finally:
        sys.modules.pop("filled_registry_block", None)


def test_a_name_bound_nowhere_fails_only_where_it_is_read() -> None:
    """The block file of a closure that reads names its original binds nowhere imports and
    runs; the method that reads one raises NameError when called, as the original does (a
    constructor's write of a ``globals()`` item binds nothing as the module loads: the file
    used to look the name up from ``globals()`` at import, a KeyError)."""
    import torch

    namespace: dict[str, object] = {"__name__": "block"}
    code = run_case("resolve_name_unbound_in_the_original").code
    exec(compile(code, "block.py", "exec"), namespace)
    block = namespace["Fit"]()  # type: ignore[operator]  # the executed file's class
    assert block(torch.ones(1, 4)).shape == (1, 4)
    with pytest.raises(NameError, match="simplify"):
        block.formula()


def test_a_guarded_module_keeps_its_imports_guarded_in_the_emitted_file() -> None:
    """The block file of a closure that inlines modules the original imports only under a
    guard imports without their package, as the original does, and is not required to have
    it; the ``try`` that imported the module still falls back (an ImportError, not a
    NameError, at the original import)."""
    extracted = run_case("emit_guarded_module_imports")
    assert "fastlib" not in " ".join(extracted.requirements)
    namespace: dict[str, object] = {"__name__": "block"}
    exec(compile(extracted.code, "block.py", "exec"), namespace)
    assert namespace["fused_2"] is None  # the try's fallback ran
    assert isinstance(namespace["_guard_pkg_quant"], ImportError)
    assert "KINDS" not in namespace  # read the absent package at load time: under the guard
    assert namespace["Block"]().forward(3) == 6  # type: ignore[operator]  # the executed file's class


def test_a_guarded_module_s_fallback_import_chain_stays_guarded() -> None:
    """A guarded module whose own imports are a ``try``/``except ImportError`` chain (the
    fallback import in the handler is not optional: it raises when both are absent) runs
    that chain in a ``try`` that keeps the error: the block file imports and runs without
    either package, and the function that imported the module raises the ImportError, as
    the original's import did."""
    extracted = run_case("emit_guarded_module_try_import")
    namespace: dict[str, object] = {"__name__": "block"}
    exec(compile(extracted.code, "block.py", "exec"), namespace)
    assert isinstance(namespace["_guard_pkg_tf_utils"], ImportError)
    assert "BACKEND" not in namespace  # read the absent package at load time: under the guard
    load = namespace["load_weights"]
    assert load("model", "path") == "model"  # type: ignore[operator]  # the executed file's function
    with pytest.raises(ImportError, match="keras_absent"):
        load("model", "path", from_keras=True)  # type: ignore[operator]  # the executed file's function


def test_a_guarded_module_used_as_an_object_is_built_under_its_guard() -> None:
    """The namespace standing for a guarded module reads that module's definitions, so it is
    built under the same guard: the block file imports without the package, and using the
    module raises the original's ImportError (it was a NameError at import)."""
    import torch

    extracted = run_case("emit_guarded_module_used_as_object")
    namespace: dict[str, object] = {"__name__": "block"}
    exec(compile(extracted.code, "block.py", "exec"), namespace)
    assert isinstance(namespace["_guard_pkg_pb"], ImportError)
    net = namespace["Net"]()  # type: ignore[operator]  # the executed file's class
    assert net(torch.ones(2)).tolist() == [1.0, 1.0]
    with pytest.raises(ImportError, match="nnrag_absent_protobuf"):
        net(torch.ones(2), proto=True)


def test_an_absent_call_time_import_raises_what_the_original_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Imports inside functions of a module the sources lack, or of a name their module
    does not bind, raise the original's ``ModuleNotFoundError``/``ImportError`` when the
    function runs that line, and only then (the eager path runs as in the original)."""
    torch = pytest.importorskip("torch")
    namespace: dict[str, object] = {"__name__": "block"}
    exec(compile(run_case("resolve_call_time_import_absent").code, "block.py", "exec"), namespace)
    decode, encode = namespace["decode"], namespace["encode"]
    assert encode(2) == 4  # type: ignore[operator]  # the executed file's function
    with pytest.raises(ImportError, match="fused_encode") as raised:
        encode(2, fused=True)  # type: ignore[operator]  # the executed file's function
    assert raised.value.name == "pkg.coders"
    assert float(decode(torch.tensor(3.0), 1.0)) == 1.0  # type: ignore[operator]  # likewise
    monkeypatch.setattr(torch.onnx, "is_in_onnx_export", lambda: True)
    with pytest.raises(ModuleNotFoundError) as missing:
        decode(torch.tensor(3.0), 1.0)  # type: ignore[operator]  # the executed file's function
    assert missing.value.name == "pkg.legacy"


def test_a_lazy_export_of_an_optional_package_is_imported_where_the_original_looks_it_up() -> None:
    """The block file imports without the optional package; the function that imported the
    name from the source package imports it from the optional package when it runs, as the
    package's ``__getattr__`` did (``ModuleNotFoundError`` naming it when it is absent)."""
    namespace: dict[str, object] = {"__name__": "block"}
    code = run_case("emit_lazy_export_of_external").code
    exec(compile(code, "block.py", "exec"), namespace)
    upload = namespace["upload"]
    assert upload(3) == 3  # type: ignore[operator]  # the executed file's function
    with pytest.raises(ModuleNotFoundError) as missing:
        upload(3, remote=True)  # type: ignore[operator]  # the executed file's function
    assert missing.value.name == "cloud_sdk_absent"


def test_a_name_another_source_s_release_lacks_says_so_and_where_it_moved() -> None:
    """The from-import that fails, the indexed release (version from its metadata), the
    module of that release that defines the name, and what to do."""
    (problem,) = run_case("resolve_problem_release_mismatch").problems
    assert problem.code == "NNR501"
    assert problem.message == (
        "`from libpkg.modeling import chunked`: the indexed release of libpkg.modeling "
        "(source 'lib', version 2.0) does not bind 'chunked' (the importing source was "
        "written for another release; libpkg.helpers of that release defines it): pin a "
        "matching release in repos.json or exclude the block"
    )


def test_names_a_package_sets_on_itself_at_run_time_say_so() -> None:
    """deepxde's backend: ``from lib.backend import relu`` and ``bkd.scale`` are set by a
    loader function with ``setattr(thismod, api, ...)``; the messages name the package and
    say it sets names on itself, not that ``lib.backend.relu`` is a module that does not
    exist."""
    problems = run_case("resolve_problem_names_set_at_run_time").problems
    messages = sorted(p.message for p in problems)
    assert len(messages) == 2
    assert all(
        "lib.backend sets names on itself when one of its functions runs" in m for m in messages
    )
    assert "'relu' is imported from lib.backend, which binds no 'relu' as written" in messages[0]
    assert "does not exist" not in messages[0]


def test_a_name_missing_from_the_block_s_own_source_is_no_release_mismatch() -> None:
    problems = run_case("resolve_problem_unresolved_name").problems
    (problem,) = [p for p in problems if p.code == "NNR501"]
    assert "release" not in problem.message
