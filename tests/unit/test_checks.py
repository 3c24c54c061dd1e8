"""Static checks of block files: every finding kind, exact scoping, headers, digests."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from nnrag.blockfile.header import body_digest, render_header
from nnrag.check.cache import CheckCache
from nnrag.check.files import check_file, check_files
from nnrag.check.static import (
    CODES,
    check_code,
    declared_imports,
    definition_digests,
    pristine_findings,
)
from nnrag.model import CATEGORIES, STAGES

SWHID = "swh:1:cnt:" + "0" * 40


def block(
    body: str,
    *,
    packages: tuple[str, ...] = ("pkg",),
    requires: tuple[str, ...] = (),
    digest: str | None = None,
) -> str:
    """A well-formed block file around ``body``."""
    body = textwrap.dedent(body).lstrip("\n")
    header = render_header(
        block_id="src:pkg.mod:Block",
        source="/tmp/src (path)",
        revision="abc",
        source_packages=packages,
        files=[("pkg/mod.py", SWHID)],
        license="MIT",
        requires=requires,
        digest=digest or body_digest(body),
    )
    return header + "\n" + body


def codes(text: str, **kwargs: object) -> list[tuple[str, int]]:
    return [(f.code, f.line) for f in check_code(text, filename="b.py", **kwargs)]  # type: ignore[arg-type]  # kwargs: test keyword arguments, typed dict[str, object]


def body_line(text: str, needle: str) -> int:
    """1-based file line of the first line containing ``needle``."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


# --------------------------------------------------------------------------- clean files

CLEAN = """
from __future__ import annotations

import math
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Block", "helper"]

SCALE = math.sqrt(2.0)


def helper(values: Sequence[float]) -> list[float]:
    total = 0.0

    def inner(v: float) -> float:
        nonlocal total
        total += v
        return v * SCALE

    squares = {k: v for k, v in enumerate(values) if (w := v) > 0}
    return [inner(v) for v in values] + list(squares.values()) + [w]


class Block:
    size = 4
    table = OrderedDict(a=size)
    double = [n * 2 for n in range(size)]

    def __init__(self, *args: object, **kwargs: object) -> None:
        global COUNTER
        COUNTER = len(args)
        self.args = args
        self.kwargs = kwargs
        self.qual = __class__.__qualname__

    def forward(self, x: float) -> float:
        try:
            return helper([x])[0] * self.size
        except ValueError as error:
            raise RuntimeError(str(error)) from None
        finally:
            del x

    __qualname__ = "Block"


def uses_counter() -> int:
    return COUNTER + len(__name__)
"""


def test_clean_file_has_no_findings() -> None:
    assert check_code(block(CLEAN), filename="b.py") == ()


def test_real_extraction_is_clean(tmp_path: Path) -> None:
    from nnrag.extract.block import extract
    from nnrag.index.build import index_tree
    from nnrag.index.discover import discover_blocks

    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text(
        "import math\nimport torch\n\nSCALE = math.sqrt(2.0)\n\n\n"
        "def act(x):\n    return torch.relu(x) * SCALE\n"
    )
    (package / "layers.py").write_text(
        textwrap.dedent(
            """\
            from torch import nn
            from .helpers import act


            class Block(nn.Module):
                def __init__(self, dim: int = 4):
                    super().__init__()
                    self.fc = nn.Linear(dim, dim)

                def forward(self, x):
                    return act(self.fc(x))
            """
        )
    )
    index = index_tree(tmp_path)
    (block,) = discover_blocks(index)
    extracted = extract(index, block)
    assert extracted.closed
    assert "def act(x):" in extracted.code
    assert check_code(extracted.code, filename="Block.py") == ()
    # and the same file with the helper's import put back is caught
    reopened = extracted.code.replace(
        "import torch\n", "import torch\nfrom pkg.helpers import act\n"
    )
    assert [f.code for f in check_code(reopened, filename="Block.py")] == ["NNR202"]


def test_every_code_is_documented_and_typed() -> None:
    import nnrag.diagnostics

    doc = nnrag.diagnostics.__doc__ or ""
    assert set(CODES) == {
        code for code, entry in nnrag.diagnostics.CODES.items() if entry.origin == "check"
    }
    for code, entry in nnrag.diagnostics.CODES.items():
        assert f"\n{code}   " in doc
        assert entry.category in (*CATEGORIES, None)
        assert entry.stage in (*STAGES, None)
        assert (entry.category is None) == (entry.stage is None) == (code == "NNR301")


# --------------------------------------------------------------------------- parse / compile


def test_syntax_error_is_parse_stage() -> None:
    (finding,) = check_code(block("def broken(:\n    pass\n"), filename="b.py")
    assert (finding.code, finding.category, finding.stage) == ("NNR001", "syntax", "parse")
    assert finding.line == body_line(block("def broken(:\n    pass\n"), "def broken")


def test_compile_error_is_compile_stage() -> None:
    text = block("def f():\n    pass\nreturn 1\n")
    (finding,) = check_code(text, filename="b.py")
    assert (finding.code, finding.stage) == ("NNR002", "compile")
    assert "return" in finding.message


def test_nonlocal_at_module_level_is_compile_error() -> None:
    text = block("def f():\n    nonlocal x\n")
    (finding,) = check_code(text, filename="b.py")
    assert finding.code == "NNR002"


# --------------------------------------------------------------------------- names


def test_undefined_name_in_method() -> None:
    text = block(
        """
        class Block:
            def forward(self, x):
                return undefined_helper(x)
        """
    )
    assert codes(text) == [("NNR101", body_line(text, "undefined_helper"))]
    (finding,) = check_code(text, filename="b.py")
    assert finding.category == "unresolved-name"
    assert finding.stage == "closed"
    assert "'undefined_helper'" in finding.message
    assert finding.col == text.splitlines()[finding.line - 1].index("undefined_helper") + 1


def test_class_attribute_is_not_visible_in_methods_or_comprehensions() -> None:
    text = block(
        """
        class Block:
            size = 2
            ok = size + 1
            bad = [size for _ in range(3)]

            def forward(self):
                return size
        """
    )
    found = check_code(text, filename="b.py")
    assert [f.code for f in found] == ["NNR101", "NNR101"]
    assert [f.line for f in found] == [
        body_line(text, "bad = "),
        body_line(text, "return size"),
    ]
    assert "self.size" in found[0].message


def test_comprehension_variable_does_not_leak() -> None:
    text = block(
        """
        values = [item for item in range(3)]
        last = item
        """
    )
    assert codes(text) == [("NNR101", body_line(text, "last = item"))]


def test_first_iterable_of_comprehension_is_evaluated_outside() -> None:
    text = block(
        """
        class Block:
            rows = range(3)
            pairs = [r for r in rows]
        """
    )
    assert codes(text) == []


def test_global_declaration_binds_at_call_time() -> None:
    text = block(
        """
        def setup():
            global STATE
            STATE = 1

        def read():
            return STATE
        """
    )
    assert codes(text) == []


def test_global_read_without_binding_is_unresolved() -> None:
    text = block(
        """
        def read():
            global STATE
            return STATE
        """
    )
    assert codes(text) == [("NNR101", body_line(text, "return STATE"))]


def test_nonlocal_and_closures_resolve() -> None:
    text = block(
        """
        def outer():
            count = 0
            def bump():
                nonlocal count
                count += 1
                return count
            return bump
        """
    )
    assert codes(text) == []


def test_use_before_definition_at_import_time() -> None:
    text = block(
        """
        SIZE = BASE * 2
        BASE = 3
        """
    )
    found = check_code(text, filename="b.py")
    assert [(f.code, f.line) for f in found] == [("NNR102", body_line(text, "SIZE ="))]
    assert "before it is defined" in found[0].message


def test_forward_reference_in_function_body_is_fine() -> None:
    text = block(
        """
        def f():
            return LATER

        LATER = 1
        """
    )
    assert codes(text) == []


def test_deleted_name_is_unresolved_for_functions() -> None:
    text = block(
        """
        TEMP = 1
        del TEMP

        def f():
            return TEMP
        """
    )
    found = check_code(text, filename="b.py")
    assert [(f.code, f.line) for f in found] == [("NNR102", body_line(text, "return TEMP"))]
    assert "del" in found[0].message


def test_name_rebound_after_del_resolves() -> None:
    text = block(
        """
        TEMP = 1
        del TEMP
        TEMP = 2

        def f():
            return TEMP
        """
    )
    assert codes(text) == []


def test_conditional_and_try_bindings_resolve() -> None:
    text = block(
        """
        try:
            import json as codec
        except ImportError:
            codec = None

        if codec is None:
            MODE = "none"
        else:
            MODE = "json"

        def f():
            return codec, MODE
        """
    )
    assert codes(text) == []


def test_type_checking_import_used_at_run_time() -> None:
    text = block(
        """
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from collections import OrderedDict

        def make():
            return OrderedDict()
        """
    )
    found = check_code(text, filename="b.py")
    assert [(f.code, f.line) for f in found] == [("NNR105", body_line(text, "return OrderedDict"))]


def test_type_checking_import_in_annotations_only_is_fine() -> None:
    text = block(
        """
        from __future__ import annotations

        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from collections import OrderedDict

        def make(x: OrderedDict) -> OrderedDict:
            y: OrderedDict = x
            return y
        """
    )
    assert codes(text) == []


def test_reads_under_type_checking_in_a_function_need_no_binding() -> None:
    """Code under ``if TYPE_CHECKING:`` never runs, in a function body as at module level
    (pyro's ``if TYPE_CHECKING: assert isinstance(site["fn"], Distribution)``, where the
    module imports ``Distribution`` for type checkers only); the ``else`` branch runs."""
    text = block(
        """
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from collections import OrderedDict

        def total(site):
            if TYPE_CHECKING:
                assert isinstance(site, OrderedDict)

                def helper(x: Missing) -> None:
                    return Absent
            else:
                return Unbound
            return site
        """
    )
    found = check_code(text, filename="b.py")
    assert [(f.code, f.line) for f in found] == [("NNR101", body_line(text, "return Unbound"))]


def test_annotations_are_evaluated_without_future_import() -> None:
    text = block(
        """
        def make(x: Missing) -> None:
            y: AlsoMissing = x
        """
    )
    # the parameter annotation runs at def time; a local variable annotation never runs
    assert codes(text) == [("NNR101", body_line(text, "def make"))]


def test_star_import_makes_names_unknowable() -> None:
    text = block(
        """
        from math import *

        def f():
            return sqrt(pi)
        """
    )
    found = check_code(text, filename="b.py")
    assert [(f.code, f.line) for f in found] == [("NNR103", body_line(text, "import *"))]
    assert "pi, sqrt" in found[0].message


def test_star_import_without_unresolved_names_is_silent() -> None:
    text = block("from math import *\n\nVALUE = 1\n")
    assert codes(text) == []


def test_all_entries_must_exist() -> None:
    text = block(
        """
        __all__ = ["Block", "Ghost"]

        class Block:
            pass
        """
    )
    found = check_code(text, filename="b.py")
    assert [(f.code, f.line) for f in found] == [("NNR104", body_line(text, "__all__"))]
    assert "'Ghost'" in found[0].message


def test_only_the_last_all_assignment_is_checked() -> None:
    """An inlined module's own ``__all__`` list, replaced by the block's at the end of the
    file, exports nothing: its entries are not the block's; a ``+=`` after the last
    assignment still is."""
    text = block(
        """
        __all__ = ["Ghost"]

        class Block:
            pass

        __all__ = ["Block"]
        __all__ += ["Phantom"]
        """
    )
    found = check_code(text, filename="b.py")
    assert [(f.code, f.line) for f in found] == [("NNR104", body_line(text, "Phantom"))]


def test_builtins_and_module_dunders_resolve() -> None:
    text = block("print(len(__file__), __name__, __doc__, NotImplemented, __debug__)\n")
    assert codes(text) == []


def test_lambda_and_default_arguments() -> None:
    text = block(
        """
        FACTOR = 2
        scale = lambda x, k=FACTOR: x * k * other
        """
    )
    assert codes(text) == [("NNR101", body_line(text, "scale ="))]


# --------------------------------------------------------------------------- imports


def test_relative_import_is_source_import() -> None:
    text = block("from .missing import helper\n")
    found = check_code(text, filename="b.py")
    assert [(f.code, f.category) for f in found] == [("NNR201", "source-import")]
    assert "from .missing import" in found[0].message


def test_source_package_import_from_header() -> None:
    text = block("import pkg.layers\nfrom pkg import helper\n", packages=("pkg",))
    assert [c for c, _ in codes(text)] == ["NNR202", "NNR202"]


def test_source_packages_argument_wins_over_header() -> None:
    text = block("import json\n", packages=("pkg",))
    assert [c for c, _ in codes(text, source_packages=frozenset({"json"}))] == ["NNR202"]


def test_installed_and_stdlib_imports_are_fine() -> None:
    text = block("import os.path\nimport pytest\nfrom collections import abc\n")
    assert codes(text) == []


def test_missing_external_and_declared_requirement() -> None:
    body = "import nnrag_surely_missing_pkg\n"
    found = check_code(block(body), filename="b.py")
    assert [(f.code, f.category) for f in found] == [("NNR203", "missing-external")]
    declared = block(body, requires=("nnrag-surely-missing-pkg>=1.0",))
    assert codes(declared) == []


def test_declared_alias_distribution() -> None:
    assert "pillow" in declared_imports(["Pillow>=9; python_version > '3'"])
    text = block("import PIL_is_not_this\nfrom PIL import Image\n", requires=("Pillow",))
    assert [c for c, _ in codes(text)] == ["NNR203"]


def test_import_in_a_branch_that_may_not_run_may_be_missing() -> None:
    text = block(
        """
        import torch
        if torch.__version__ == "parrots":
            from nnrag_surely_missing_parrots import X
        else:
            from torch.nn import Linear as X
        """
    )
    assert codes(text) == []
    assert [c for c, _ in codes(block("import nnrag_surely_missing_pkg\n"))] == ["NNR203"]


def test_guarded_optional_import_may_be_missing() -> None:
    text = block(
        """
        try:
            import nnrag_surely_missing_pkg as fast
        except ImportError:
            fast = None
        """
    )
    assert codes(text) == []


def test_lazy_third_party_import_in_function_is_optional() -> None:
    text = block(
        """
        def convert(weights, bfloat16=False):
            if bfloat16:
                import nnrag_surely_missing_pkg.numpy as jnp
                return jnp.asarray(weights)
            return weights
        """
    )
    assert codes(text) == []


def test_type_checking_imports_are_not_checked() -> None:
    text = block(
        """
        from __future__ import annotations
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from pkg import Thing
            import nnrag_surely_missing_pkg

        def f(x: Thing) -> None:
            return None
        """
    )
    assert codes(text) == []


def test_lazy_import_inside_function_is_checked() -> None:
    text = block(
        """
        def f():
            from pkg.layers import helper
            return helper
        """
    )
    assert [c for c, _ in codes(text)] == ["NNR202"]


def test_check_never_imports_the_checked_module(tmp_path: Path) -> None:
    import sys

    text = block("import nnrag_checked_marker_module\n")
    (tmp_path / "nnrag_checked_marker_module.py").write_text("raise SystemExit('imported!')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        assert codes(text) == []  # found by find_spec, never executed
    finally:
        sys.path.remove(str(tmp_path))
    assert "nnrag_checked_marker_module" not in sys.modules


# --------------------------------------------------------------------------- header / digest


def test_missing_header() -> None:
    found = check_code("import os\n", filename="b.py")
    assert [(f.code, f.line, f.category) for f in found] == [("NNR010", 1, "syntax")]


def test_malformed_header_line() -> None:
    text = block("X = 1\n").replace("# license: MIT", "# licence: MIT")
    found = check_code(text, filename="b.py")
    assert {f.code for f in found} == {"NNR011"}
    assert any("licence" in f.message for f in found)


def test_pristine_digest(tmp_path: Path) -> None:
    text = block("X = 1\n")
    assert pristine_findings(text) == ()
    edited = text.replace("X = 1", "X = 2")
    (finding,) = pristine_findings(edited)
    assert finding.code == "NNR012"
    assert finding.line == body_line(edited, "# digest:")
    assert "body edited since extraction" in finding.message
    path = tmp_path / "Block.py"
    path.write_text(edited)
    assert check_file(path) == ()
    assert [f.code for f in check_file(path, pristine=True)] == ["NNR012"]


def test_pristine_names_the_edited_definitions(tmp_path: Path) -> None:
    body = textwrap.dedent(
        """\
        import math

        SCALE = 2.0


        def helper(x):
            return x * SCALE


        class Block:
            def forward(self, x):
                return helper(x)


        def unused():
            return math.pi
        """
    )
    text = block(body)
    recorded = definition_digests(body)
    assert sorted(recorded) == ["Block", "SCALE", "helper", "unused"]
    assert pristine_findings(text, definitions=recorded) == ()
    edited = text.replace("return x * SCALE", "return x * SCALE + 1").replace(
        "def unused():\n    return math.pi\n", "def extra():\n    return 1\n"
    )
    (finding,) = pristine_findings(edited, definitions=recorded)
    first = body_line(edited, "def helper")
    assert finding.line == first
    assert finding.message.endswith(
        f": changed helper (lines {first}-{first + 1}), "
        f"added extra (line {body_line(edited, 'def extra')}), removed unused; keep the edit "
        "(and drop --pristine for this file), or restore the vendored version with "
        "`nnrag refresh --force` (discards the edit)"
    )
    path = tmp_path / "Block.py"
    path.write_text(edited)
    assert check_file(path, pristine=True, definitions=recorded) == (
        replace(finding, path=str(path)),
    )
    comment_only = text.replace("import math\n", "import math  # why\n")
    (finding,) = pristine_findings(comment_only, definitions=recorded)
    assert "no definition changed" in finding.message


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "b.py"
    path.write_bytes(b"# nnrag block: \xff\n")
    (finding,) = check_file(path)
    assert finding.code == "NNR001"
    assert "UTF-8" in finding.message


def test_crlf_file_reads_as_text(tmp_path: Path) -> None:
    text = block("def f():\n    return missing\n")
    path = tmp_path / "b.py"
    path.write_bytes(text.replace("\n", "\r\n").encode())
    assert check_file(path) == check_code(text, filename=str(path))


# --------------------------------------------------------------------------- cache

OPEN = "import nnrag_surely_missing_pkg\n\n\ndef f():\n    return missing + len([])\n"


def test_cache_returns_the_findings_of_a_fresh_check(tmp_path: Path) -> None:
    path = tmp_path / "b.py"
    path.write_text(block(OPEN))
    cache = CheckCache(tmp_path / "cache")
    fresh = check_file(path)
    assert [f.code for f in fresh] == ["NNR203", "NNR101"]
    assert check_file(path, cache=cache) == fresh  # a miss: checked and stored
    (entry,) = (tmp_path / "cache").glob("*.json")
    assert check_file(path, cache=cache) == fresh  # a hit
    path.write_text(block(OPEN.replace("missing +", "")))  # new content, new key
    assert [f.code for f in check_file(path, cache=cache)] == ["NNR203"]
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2
    entry.write_text("{not json")  # a broken entry is a miss, never an error
    path.write_text(block(OPEN))
    assert check_file(path, cache=cache) == fresh


def test_cache_hit_rechecks_installed_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nnrag.check.cache
    import nnrag.check.static

    path = tmp_path / "b.py"
    path.write_text(block(OPEN))
    cache = CheckCache(tmp_path / "cache")
    assert [f.code for f in check_file(path, cache=cache)] == ["NNR203", "NNR101"]
    for module in (nnrag.check.static, nnrag.check.cache):  # now installed
        monkeypatch.setattr(module, "is_installed", lambda top: True)
    assert [f.code for f in check_file(path, cache=cache)] == ["NNR101"]


def test_cache_key_covers_content_and_code(tmp_path: Path) -> None:
    cache = CheckCache(tmp_path)
    assert cache.key(b"a") == CheckCache(tmp_path / "other").key(b"a")
    assert cache.key(b"a") != cache.key(b"b")


def test_unwritable_cache_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "b.py"
    path.write_text(block(OPEN))
    (tmp_path / "file").write_text("")
    cache = CheckCache(tmp_path / "file" / "cache")  # cannot be created
    assert check_file(path, cache=cache) == check_file(path)


def _files(tmp_path: Path) -> list[Path]:
    bodies = [
        OPEN,
        CLEAN,
        "from .missing import helper\n",
        "def f(:\n",
        OPEN.replace("missing +", "other +"),
    ]
    paths = []
    for number, body in enumerate(bodies):
        path = tmp_path / f"b{number}.py"
        path.write_text(block(body))
        paths.append(path)
    return [*paths, tmp_path / "gone.py"]


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_check_files_is_check_file_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """Also in forked processes (the size threshold lowered so that these small files fork)."""
    import nnrag.check.files

    paths = _files(tmp_path)
    expected = [check_file(path) for path in paths[:-1]]
    monkeypatch.setattr(nnrag.check.files, "_PARALLEL_MIN_CHARS", 0)
    *found, gone = check_files(paths, workers=workers, cache=CheckCache(tmp_path / "cache"))
    assert found == expected
    assert [f[0].code if f else None for f in expected] == [
        "NNR203",
        None,
        "NNR201",
        "NNR001",
        "NNR203",
    ]
    assert isinstance(gone, FileNotFoundError)
    assert len(list((tmp_path / "cache").glob("*.json"))) == 5  # the forked checks' too


def test_check_files_pristine_uses_each_files_definitions(tmp_path: Path) -> None:
    path = tmp_path / "b.py"
    path.write_text(block(CLEAN).replace("import math", "import math  # edited"))
    (plain,) = check_files([path], pristine=True)
    (named,) = check_files(
        [path],
        pristine=True,
        definitions={path: definition_digests(textwrap.dedent(CLEAN).lstrip("\n"))},
    )
    assert isinstance(plain, tuple)
    assert isinstance(named, tuple)
    assert [f.code for f in plain] == [f.code for f in named] == ["NNR012"]
    assert "only the digest is recorded" in plain[0].message
    assert "no definition changed (comments, blank lines or imports did)" in named[0].message


# --------------------------------------------------------------------------- compile

COMPILE_CASES = {
    "clean": "import os\n\n\ndef f():\n    return os.sep\n",
    "return_outside": "x = 1\n\n\ndef f():\n    pass\n\n\nreturn x\n",
    "global_after_assignment": "x = 1\nglobal x\n",
    "global_in_module_if": "x = 1\nif x:\n    global x\n",
    "global_in_module_try": "y = 1\ntry:\n    pass\nexcept Exception:\n    global y\n",
    "late_future": '"""doc"""\nimport os\nfrom __future__ import annotations\n',
    "unknown_future": "from __future__ import braces\n",
    "future_first": '"""doc"""\nfrom __future__ import annotations\n\n\ndef f(x: int) -> int:\n'
    "    return x\n",
    "codegen_then_symtable": "def f():\n    pass\n\n\nbreak\n\n\ndef g():\n    nonlocal q\n",
    "one_line_statements": "x = 1; y = 2\nbreak\n",
    "decorated": "import functools\n\n\n@functools.cache\n# note\ndef f():\n"
    "    yield from ()\n    return 1\n",
    "starred": "a, *b, *c = range(5)\n",
    "except_order": "try:\n    pass\nexcept:\n    pass\nexcept ValueError:\n    pass\n",
    "annotated_global": "def f():\n    x: int = 1\n    global x\n",
}


def _compiler_error(text: str) -> tuple[str, int, int] | None:
    try:
        compile(text, "b.py", "exec", dont_inherit=True)
    except SyntaxError as error:
        return error.msg, error.lineno or 1, max(error.offset or 1, 1)
    return None


def test_compile_findings_are_the_compilers_own() -> None:
    """Statement by statement, with statements shared between files compiled once, the
    NNR002 finding is exactly the error of compiling the whole file."""
    from nnrag.check.pieces import Compiled
    from nnrag.check.static import check_text

    compiled = Compiled()
    for _ in range(2):  # the second round reuses what the first compiled
        for name, text in COMPILE_CASES.items():
            found, _ = check_text(text, filename="b.py", source_packages=None, compiled=compiled)
            nnr002 = [(f.message, f.line, f.col) for f in found if f.code == "NNR002"]
            error = _compiler_error(text)
            expected = [] if error is None else [(f"does not compile: {error[0]}", *error[1:])]
            assert nnr002 == expected, name
    assert any(text.startswith("import os\n") for _, text in compiled.statements)


def test_compile_warnings_keep_their_file_lines() -> None:
    text = "import os\n\n\ndef f(x):\n    return x is 1\n"
    with pytest.warns(SyntaxWarning) as caught:
        check_code(text, filename="w.py")
    assert [(w.filename, w.lineno) for w in caught] == [("w.py", 5)]


@pytest.mark.parametrize("code", sorted(set(CODES) - {"NNR301"}))
def test_finding_format(code: str) -> None:
    from nnrag.diagnostics import restore
    from nnrag.report import format_diagnostic

    finding = restore(code, "message", path="b.py", line=3, col=7)
    assert (finding.category, finding.stage) == CODES[code]
    assert format_diagnostic(finding) == f"b.py:3:7: {code} message"
    assert format_diagnostic(finding, path="dir/b.py") == f"dir/b.py:3:7: {code} message"


def test_noqa_and_code_selection() -> None:
    from nnrag.cli_check import kept
    from nnrag.diagnostics import restore, suppressed

    assert suppressed("x = 1  # noqa", "NNR101")
    assert suppressed("x = 1  # noqa: NNR101, NNR203", "NNR203")
    assert suppressed("x = 1  # NOQA:nnr101", "NNR101")
    assert not suppressed("x = 1  # noqa: NNR101", "NNR203")
    assert not suppressed("x = 1", "NNR101")
    findings = [
        restore("NNR101", "a", line=1),
        restore("NNR203", "b", line=2),
        restore("NNR010", "c", line=0),
    ]
    lines = ["a  # noqa: NNR101", "b"]
    assert [f.code for f in kept(findings, lines, select=None, ignore=())] == ["NNR203", "NNR010"]
    assert [f.code for f in kept(findings, [], select=("NNR1", "NNR0"), ignore=())] == [
        "NNR101",
        "NNR010",
    ]
    assert [f.code for f in kept(findings, [], select=None, ignore=("NNR",))] == []
