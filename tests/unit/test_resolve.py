"""Resolution: the exact closure of a block, its order, renames and problems."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from nnrag.extract.block import extract
from nnrag.extract.resolve import resolve
from nnrag.index.build import Index, index_tree
from nnrag.model import BlockRef, Closure
from nnrag.report import format_diagnostic


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def tree(root: Path, files: dict[str, str], *, source: str = "src") -> Index:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(src(text), encoding="utf-8")
    return index_tree(root, source=source)


def block(index: Index, target: str, *, source: str = "src") -> BlockRef:
    module, name = target.split(":")
    info = index.module(module, prefer=source)
    assert info is not None
    for unit in info.units:
        for klass in unit.classes:
            if klass.name == name:
                return BlockRef(
                    source=info.source, module=module, name=name, path=info.path, line=klass.line
                )
    raise AssertionError(target)


def close(index: Index, target: str, *, source: str = "src") -> Closure:
    return resolve(index, block(index, target, source=source))


def names(index: Index, closure: Closure) -> list[str]:
    """``module:first-bound-name`` of each unit, in closure order."""
    found = []
    for ref in closure.units:
        info = index.module(ref.module, prefer=ref.source)
        assert info is not None
        unit = next(u for u in info.units if u.index == ref.index)
        found.append(f"{ref.module}:{unit.binds[0] if unit.binds else unit.kind}")
    return found


def imports(closure: Closure) -> set[tuple[str, str, str | None]]:
    return {(b.name, b.module, b.attr) for b in closure.imports}


def categories(closure: Closure) -> list[str]:
    return sorted(p.category for p in closure.problems)


def test_closure_is_exact_and_load_time_dependencies_come_first(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/helpers.py": """
                import math
                import torch.nn.functional as F
                UNUSED = 1
                SCALE = math.sqrt(2)
                def act(x):
                    return F.gelu(x) * SCALE
                def unused():
                    return UNUSED
            """,
            "pkg/model.py": """
                from torch import nn
                from .helpers import act as activation
                class Net(nn.Module):
                    def forward(self, x):
                        return activation(x)
                class Base(nn.Module):
                    pass
                class Other(Base):
                    pass
            """,
        },
    )
    closure = close(index, "pkg.model:Net")
    assert names(index, closure) == ["pkg.helpers:SCALE", "pkg.helpers:act", "pkg.model:Net"]
    assert imports(closure) == {
        ("math", "math", None),
        ("F", "torch.nn.functional", None),
        ("nn", "torch", "nn"),
    }
    assert closure.references == {("pkg.model", "activation"): ("pkg.helpers", "act")}
    assert closure.problems == ()
    other = close(index, "pkg.model:Other")
    assert names(index, other) == ["pkg.model:Base", "pkg.model:Other"]


def test_base_defined_later_in_another_module_is_ordered_first(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "a/__init__.py": "",
            "a/model.py": "from a.z_base import Base\nclass Net(Base):\n    pass\n",
            "a/z_base.py": "from torch import nn\nclass Base(nn.Module):\n    pass\n",
        },
    )
    assert names(index, close(index, "a.model:Net")) == ["a.z_base:Base", "a.model:Net"]


def test_load_time_call_pulls_its_call_time_needs_before(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "b/__init__.py": "",
            "b/a_model.py": """
                from torch import nn
                from b.z_reg import register
                @register
                class Net(nn.Module):
                    pass
            """,
            "b/z_reg.py": """
                def register(cls):
                    SEEN.append(cls)
                    return cls
                SEEN = []
            """,
        },
    )
    order = names(index, close(index, "b.a_model:Net"))
    assert order.index("b.z_reg:SEEN") < order.index("b.a_model:Net")
    assert order.index("b.z_reg:register") < order.index("b.a_model:Net")


def test_multi_name_unit_included_once_and_cycles_are_fine(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "c/__init__.py": "",
            "c/m.py": """
                from torch import nn
                WIDTH, DEPTH = 4, 2
                def ping(n):
                    return pong(n - 1) if n else WIDTH
                def pong(n):
                    return ping(n) + DEPTH
                class Net(nn.Module):
                    def forward(self, x):
                        return ping(3) * DEPTH
            """,
        },
    )
    closure = close(index, "c.m:Net")
    assert names(index, closure) == ["c.m:DEPTH", "c.m:ping", "c.m:pong", "c.m:Net"]
    assert len(closure.units) == len(set(closure.units))


def test_import_chains_relative_reexports_and_star(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "d/__init__.py": "from .layers import *\n",
            "d/layers/__init__.py": "from .mlp import *\nfrom . import norm\n",
            "d/layers/mlp.py": """
                __all__ = ["Mlp"]
                from torch import nn
                class Mlp(nn.Module):
                    pass
                class NotExported(nn.Module):
                    pass
            """,
            "d/layers/norm.py": "def rms(x):\n    return x\n",
            "d/deep/__init__.py": "",
            "d/deep/ops.py": "def op(x):\n    return x\n",
            "d/model.py": """
                import d.deep as dd
                import d.layers
                from d import Mlp as Block
                from torch import nn
                class Net(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.a = Block()
                        self.b = d.layers.norm.rms
                    def forward(self, x):
                        return dd.ops.op(x)
            """,
        },
    )
    closure = close(index, "d.model:Net")
    assert names(index, closure) == [
        "d.deep.ops:op",
        "d.layers.mlp:Mlp",
        "d.layers.norm:rms",
        "d.model:Net",
    ]
    assert closure.references == {
        ("d.model", "Block"): ("d.layers.mlp", "Mlp"),
        ("d.model", "d.layers.norm.rms"): ("d.layers.norm", "rms"),
        ("d.model", "dd.ops.op"): ("d.deep.ops", "op"),
    }
    assert ("nn", "torch", "nn") in imports(closure)
    assert all(not b.module.startswith("d") for b in closure.imports)


def test_conditional_imports_type_checking_and_try_except(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "e/__init__.py": "",
            "e/fast.py": "def fused(x):\n    return x\n",
            "e/typed.py": "class Config:\n    pass\n",
            "e/m.py": """
                from __future__ import annotations
                from typing import TYPE_CHECKING
                from torch import nn
                if TYPE_CHECKING:
                    from .typed import Config
                try:
                    from apex import normalization
                except ImportError:
                    normalization = None
                try:
                    from .fast import fused
                except ImportError:
                    fused = None
                class Net(nn.Module):
                    def forward(self, x, cfg: Config | None = None):
                        if normalization is not None:
                            return fused(x)
                        return x
            """,
        },
    )
    closure = close(index, "e.m:Net")
    order = names(index, closure)
    assert "e.typed:Config" not in order
    assert order == ["e.fast:fused", "e.m:normalization", "e.m:fused", "e.m:Net"]
    assert ("normalization", "apex", "normalization") not in imports(closure)  # kept in its unit
    assert closure.problems == ()
    assert closure.renames == {}  # `fused` in both modules is one object


def test_constants_partial_decorators_defaults_metaclass_class_attributes(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "f/__init__.py": "",
            "f/parts.py": """
                import functools
                from torch import nn
                EPS = 1e-5
                def norm(dim, eps):
                    return nn.LayerNorm(dim, eps=eps)
                Norm = functools.partial(norm, eps=EPS)
                def tag(name):
                    def wrap(cls):
                        cls.tag = name
                        return cls
                    return wrap
                class Meta(type):
                    pass
                DEFAULT_DIM = 8
                ACTS = {"relu": nn.ReLU}
            """,
            "f/m.py": """
                from torch import nn
                from .parts import Norm, tag, Meta, DEFAULT_DIM, ACTS
                class Mixin(metaclass=Meta):
                    pass
                @tag("net")
                class Net(nn.Module, Mixin):
                    act = ACTS["relu"]
                    def __init__(self, dim=DEFAULT_DIM):
                        super().__init__()
                        self.norm = Norm(dim)
            """,
        },
    )
    order = names(index, close(index, "f.m:Net"))
    assert set(order) == {
        "f.parts:EPS",
        "f.parts:norm",
        "f.parts:Norm",
        "f.parts:tag",
        "f.parts:Meta",
        "f.parts:DEFAULT_DIM",
        "f.parts:ACTS",
        "f.m:Mixin",
        "f.m:Net",
    }
    assert order.index("f.parts:Meta") < order.index("f.m:Mixin") < order.index("f.m:Net")
    assert order.index("f.parts:norm") < order.index("f.parts:Norm")


def test_collisions_are_renamed_and_the_target_keeps_its_name(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "g/__init__.py": "",
            "g/one.py": """
                import torch.nn.functional as F
                from torch import nn
                class Mlp(nn.Module):
                    def forward(self, x):
                        return F.relu(x)
                def round(x):
                    return x
                def helper(x):
                    return round(x)
            """,
            "g/two.py": """
                from torch import nn
                from .one import Mlp as OneMlp, helper
                F = 2.0
                class Mlp(nn.Module):
                    def forward(self, x):
                        return OneMlp()(x) * F + helper(x) + round(x)
            """,
        },
    )
    closure = close(index, "g.two:Mlp")
    assert closure.renames == {
        ("g.one", "Mlp"): "one_Mlp",
        ("g.two", "F"): "two_F",
        ("g.one", "round"): "one_round",
    }


def test_external_imports_with_the_same_name_but_other_targets_collide(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "h/__init__.py": "",
            "h/a.py": "from math import inf\ndef big():\n    return inf\n",
            "h/b.py": """
                from torch import inf, nn
                from .a import big
                class Net(nn.Module):
                    def forward(self, x):
                        return x.clamp(max=inf) + big()
            """,
        },
    )
    closure = close(index, "h.b:Net")
    assert closure.renames == {("h.b", "inf"): "b_inf"} or closure.renames == {
        ("h.a", "inf"): "a_inf"
    }
    assert len(closure.renames) == 1


def test_cross_source_inlining(tmp_path: Path) -> None:
    lib = tree(
        tmp_path / "lib", {"lib/__init__.py": "def helper(x):\n    return x\n"}, source="lib"
    )
    app = tree(
        tmp_path / "app",
        {
            "app/__init__.py": "",
            "app/m.py": """
                from torch import nn
                from lib import helper
                class Net(nn.Module):
                    def forward(self, x):
                        return helper(x)
            """,
        },
        source="app",
    )
    both = Index(
        checkouts={**lib.checkouts, **app.checkouts}, modules=[*lib.modules(), *app.modules()]
    )
    closure = close(both, "app.m:Net", source="app")
    assert [(u.source, u.module) for u in closure.units] == [("app", "app.m"), ("lib", "lib")]
    assert all(b.module != "lib" for b in closure.imports)


def test_a_source_package_that_is_also_installed_is_inlined(tmp_path: Path) -> None:
    # `packaging` is installed in the test environment; the indexed one must win
    index = tree(
        tmp_path,
        {
            "packaging/__init__.py": "",
            "packaging/version.py": "def parse(v):\n    return v\n",
            "packaging/net.py": """
                from torch import nn
                from packaging.version import parse
                class Net(nn.Module):
                    def forward(self, x):
                        return parse(x)
            """,
        },
    )
    closure = close(index, "packaging.net:Net")
    assert "packaging.version:parse" in names(index, closure)
    assert all(not b.module.startswith("packaging") for b in closure.imports)


def test_problems_have_categories_paths_and_locations(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "p/__init__.py": "",
            "p/layers.py": "def conv():\n    return 1\n",
            "p/broken.py": "def oops(:\n",
            "p/util.py": """
                import os
                from . import layers
                from . import _ext
                from .broken import oops
                _REGISTRY = {}
                def register(cls):
                    _REGISTRY[cls.__name__] = cls
                    return cls
                def build(name):
                    return _REGISTRY[name]()
                def data_path():
                    return os.path.join(os.path.dirname(__file__), "table.csv")
                def dynamic(name):
                    return getattr(layers, name)()
                def lookup(name):
                    return globals()[name]
                def helper():
                    return missing_name + _ext.op() + oops()
            """,
            "p/other.py": "from .util import register\n@register\nclass Elsewhere:\n    pass\n",
            "p/m.py": """
                from torch import nn
                from .util import build, data_path, dynamic, lookup, helper
                class Net(nn.Module):
                    def forward(self, x):
                        return build("a"), data_path(), dynamic("conv"), lookup("x"), helper()
            """,
        },
    )
    closure = close(index, "p.m:Net")
    # getattr(layers, name) with a name no string of its unit gives: a lookup by a key
    # computed at run time, reported; nothing of the module is carried
    assert categories(closure) == [
        "dynamic-registry",
        "dynamic-registry",
        "dynamic-registry",
        "native-op",
        "resource-file",
        "runtime-error",
        "source-import",
    ]
    assert closure.namespaces == {"p.layers": ()}
    lookup = next(p for p in closure.problems if "getattr(layers" in p.message)
    assert lookup.dependency_path == ("Net", "dynamic")
    # read in a function, bound nowhere in its module: the original raises NameError there
    unbound = next(p for p in closure.problems if p.category == "runtime-error")
    assert unbound.code == "NNR506"
    assert unbound.dependency_path == ("Net", "helper")
    assert "missing_name" in unbound.message
    assert unbound.location == "p/util.py:18:12"
    resource = next(p for p in closure.problems if p.category == "resource-file")
    assert resource.dependency_path == ("Net", "data_path")
    assert resource.location.startswith("p/util.py:12:")
    assert resource.code == "NNR505"
    assert f"{resource.location}: NNR505 Net -> data_path: " in format_diagnostic(resource)
    assert any("_REGISTRY" in p.message and "p.other" in p.message for p in closure.problems)
    for problem in closure.problems:
        assert problem.location.startswith("p/util.py:")


def test_registry_filled_in_its_own_module_is_inlined_whole(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "r/__init__.py": "",
            "r/ops.py": """
                HANDLERS = {}
                def implements(name):
                    def deco(fn):
                        HANDLERS[name] = fn
                        return fn
                    return deco
                @implements("add")
                def _add(a, b):
                    return a + b
                @implements("mul")
                def _mul(a, b):
                    return a * b
                def dispatch(name, *args):
                    return HANDLERS[name](*args)
            """,
            "r/m.py": """
                from torch import nn
                from .ops import dispatch
                class Net(nn.Module):
                    def forward(self, x):
                        return dispatch("add", x, x)
            """,
        },
    )
    closure = close(index, "r.m:Net")
    order = names(index, closure)
    assert {"r.ops:_add", "r.ops:_mul", "r.ops:HANDLERS", "r.ops:implements"} <= set(order)
    assert order.index("r.ops:implements") < order.index("r.ops:_add")
    assert closure.problems == ()


def test_a_cache_is_not_a_registry(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "s.py": """
                from torch import nn
                _CACHE = {}
                def cached(n):
                    if n not in _CACHE:
                        _CACHE[n] = n * 2
                    return _CACHE[n]
                class Net(nn.Module):
                    def forward(self, x):
                        return cached(x)
            """,
        },
    )
    assert close(index, "s:Net").problems == ()


def test_native_torch_ops_of_the_source_close(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "vis/__init__.py": "",
            "vis/ops.py": """
                import torch
                from torch import nn
                class Nms(nn.Module):
                    def forward(self, boxes):
                        return torch.ops.vis.nms(boxes) + torch.ops.aten.add(boxes, boxes)
            """,
        },
    )
    closure = close(index, "vis.ops:Nms")
    # the Python closure is complete: the operator's binary is the block file's requirement,
    # loaded (or reported as native-op) at run time (tests/cases/emit_torch_ops_of_the_source)
    assert categories(closure) == []


def test_resolution_is_deterministic(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "t/__init__.py": "",
            "t/a.py": "X = 1\nY = 2\n",
            "t/b.py": "from .a import X, Y\ndef f():\n    return X + Y\n",
            "t/m.py": """
                from torch import nn
                from .b import f
                from .a import Y
                class Net(nn.Module):
                    size = Y
                    def forward(self, x):
                        return f()
            """,
        },
    )
    first = close(index, "t.m:Net")
    second = resolve(index_tree(tmp_path, source="src"), block(index, "t.m:Net"))
    assert first == second


def test_namespace_identity_checks_are_not_lookups(tmp_path: Path) -> None:
    index = tree(
        tmp_path,
        {
            "u/__init__.py": "",
            "u/aggr.py": "class Sum:\n    pass\n",
            "u/m.py": """
                import inspect
                from torch import nn
                def caller():
                    frame = inspect.currentframe()
                    while frame is not None and frame.f_globals is globals():
                        frame = frame.f_back
                    globals()["cache"] = 1
                    return frame
                def resolver(name):
                    import u.aggr as aggr
                    return {k.lower(): v for k, v in vars(aggr).items()}[name]
                class Net(nn.Module):
                    def forward(self, x):
                        return caller(), x
                class Lookup(nn.Module):
                    def forward(self, x):
                        return resolver("sum")
            """,
        },
    )
    assert close(index, "u.m:Net").problems == ()
    # vars() over a locally imported source module enumerates a namespace of its definitions
    lookup = close(index, "u.m:Lookup")
    assert lookup.problems == ()
    assert lookup.namespaces == {"u.aggr": (("Sum", "u.aggr", "Sum"),)}


def _random_closed_graph(seed: int, size: int) -> dict[tuple[str, str, int], frozenset]:
    import random

    rng = random.Random(seed)
    keys = [("src", f"m{rng.randrange(3)}", n) for n in range(size)]
    return {
        key: frozenset(rng.sample([k for k in keys if k != key], rng.randrange(0, 4)))
        for key in keys
    }


def test_memoized_components_order_like_tarjan_and_kahn() -> None:
    """The memoized component order equals the per-closure one, on graphs with cycles, also
    when components were learned earlier from a closed part of the graph."""
    from nnrag.extract.order import Components as _Components
    from nnrag.extract.order import topological as _topological

    def sort_key(key: tuple[str, str, int]) -> tuple[str, str, int, int]:
        return (key[0], key[1], -key[2], key[2])  # not the insertion order

    for seed in range(60):
        needs = _random_closed_graph(seed, 25)
        expected = _topological(needs, sort_key)
        assert sorted(expected) == sorted(needs)
        assert _Components.order({}, needs, sort_key) == expected
        # learn a closed part first (everything one unit reaches), then the whole graph
        start = min(needs)
        part, stack = {start}, [start]
        while stack:
            for dep in needs[stack.pop()]:
                if dep not in part:
                    part.add(dep)
                    stack.append(dep)
        memo: dict = {}
        sub = {key: needs[key] for key in part}
        assert _Components.order(memo, sub, sort_key) == _topological(sub, sort_key)
        assert _Components.order(memo, needs, sort_key) == expected


def _methods_by_class(code: str) -> dict[str, set[str]]:
    """Each module-level class of ``code`` -> the names of the methods it defines."""
    return {
        node.name: {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
        for node in ast.parse(code).body
        if isinstance(node, ast.ClassDef)
    }


def test_a_data_class_forward_receives_through_an_alias_is_real_with_its_called_method(
    tmp_path: Path,
) -> None:
    """forward(x, samples: Samples) with Samples = List[Sample]: the block receives Sample
    objects and calls ``to`` on them, so the emitted Sample is the real class with ``to``;
    a class named through an alias only in the constructor's parameters stays a stand-in."""
    index = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/data.py": """
                class Sample:
                    def to(self, device):
                        return self

                    def save(self, path):
                        return path


                class Options:
                    def load(self):
                        return {}
            """,
            "pkg/model.py": """
                from typing import List, Union

                from torch import nn

                from .data import Options, Sample

                Samples = List[Sample]
                OptionsType = Union[Options, dict]


                class Block(nn.Module):
                    def __init__(self, options: OptionsType = None):
                        super().__init__()

                    def forward(self, x, samples: Samples = ()):
                        return x, [sample.to(x.device) for sample in samples]
            """,
        },
    )
    classes = _methods_by_class(extract(index, block(index, "pkg.model:Block")).code)
    assert "to" in classes["Sample"]
    assert "save" not in classes["Sample"]
    assert classes["Options"] == set()  # the empty stand-in


def test_an_alias_first_reached_as_a_type_test_is_real_once_a_method_receives_it(
    tmp_path: Path,
) -> None:
    """``describe(samples: Samples)`` (a function: a type test) brings the alias in first;
    the method ``Helper.consume(samples: Samples)``, kept later (method by method), makes
    its class real all the same."""
    index = tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/data.py": """
                from typing import List


                class Sample:
                    def to(self, device):
                        return self


                Samples = List[Sample]


                def describe(samples: Samples) -> int:
                    return 0


                class Helper:
                    def consume(self, samples: Samples):
                        return [sample.to(0) for sample in samples]
            """,
            "pkg/model.py": """
                from torch import nn

                from .data import Helper, describe


                class Block(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.helper = Helper()

                    def forward(self, x, samples=()):
                        describe(samples)
                        return x, self.helper.consume(samples)
            """,
        },
    )
    classes = _methods_by_class(extract(index, block(index, "pkg.model:Block")).code)
    assert "to" in classes["Sample"]
