"""Validate a small hand-made block in the real sandbox: the probe tests' one helper."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from nnrag.model import ValidationResult
from nnrag.validate.sandbox import Sandbox
from nnrag.validate.stages import run_validation

HEAD = "import torch\nfrom torch import nn\n\n"

SPEC_PART = """\
from torch import nn


class Part(nn.Module):
    def __init__(self, spec):
        super().__init__()
        rows, cols = (int(v) for v in spec.split("x"))  # only a real call says "3x5"
        self.lin = nn.Linear(rows, cols)

    def forward(self, x):
        return self.lin(x)
"""
"""A block no search can build: only a real call (a harvest, a hint) gives ``spec="3x5"``."""

TOY_REGISTRY = """class Registry:
    def __init__(self, name):
        self.name = name
        self._module_dict = {}

    def register_module(self, module=None):
        if module is not None:
            self._module_dict[module.__name__] = module
            return module

        def register(cls):
            self._module_dict[cls.__name__] = cls
            return cls
        return register

    def build(self, cfg):
        cfg = dict(cfg)
        return self._module_dict[cfg.pop("type")](**cfg)
"""
"""A registry in the shape of the frameworks' (``register_module`` as a decorator or with
``module=``, ``build`` of a ``dict(type=...)``), for hand-made blocks to paste in."""

SCOPED_REGISTRY = """class DefaultScope:
    \"\"\"The scope builds start from, as a framework's runner sets it.\"\"\"

    current = None

    def __init__(self, scope_name):
        self.scope_name = scope_name

    @classmethod
    def get_instance(cls, name, scope_name):
        cls.current = cls(scope_name)
        return cls.current


class Registry:
    \"\"\"Registries in a tree of scopes: a plain type string resolves in the registry and its
    ancestors, ``scope.Type`` in the registry of that scope anywhere in the tree; a build
    starts from the registry of the default scope where one is set.\"\"\"

    def __init__(self, name, scope, parent=None):
        self.name, self.scope, self.parent = name, scope, parent
        self._module_dict, self.children = {}, {}
        if parent is not None:
            parent.children[scope] = self

    def register_module(self):
        def register(cls):
            self._module_dict[cls.__name__] = cls
            return cls
        return register

    def root(self):
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def get(self, key):
        scope, _, name = key.rpartition(".")
        if scope and scope != self.scope:
            root = self.root()
            return root.children[scope].get(name) if scope in root.children else None
        node = self
        while node is not None and name not in node._module_dict:
            node = node.parent
        return None if node is None else node._module_dict[name]

    def build(self, cfg):
        cfg = dict(cfg)
        key = cfg.pop("type")
        node = self
        if DefaultScope.current is not None:
            node = self.root().children.get(DefaultScope.current.scope_name, self)
        cls = node.get(key)
        if cls is None:
            raise KeyError(f"{key} is not in the {self.scope}::{self.name} registry")
        return cls(**cfg)
"""
"""Registries in a tree of scopes, in the shape of mmengine's (``scope.Type`` keys, a
``DefaultScope`` a runner sets), for hand-made blocks to paste in."""


def probe(
    sandbox: Sandbox,
    tmp_path: Path,
    code: str,
    name: str = "Block",
    replay: dict[str, Any] | None = None,
    head: str = HEAD,
    module: str = "m",
) -> ValidationResult:
    """Write ``code`` (after ``head``: torch's imports) as ``<name>.py`` and validate class
    ``name`` as a block of ``module`` (with ``replay``: rerun exactly that recorded recipe)."""
    path = tmp_path / f"{name}.py"
    path.write_text(head + textwrap.dedent(code))
    result, _ = run_validation(
        path, block_id=f"t:{module}:{name}", class_name=name, sandbox=sandbox, replay=replay
    )
    return result


def validate_text(sandbox: Sandbox, tmp_path: Path, code: str, **extra: Any) -> ValidationResult:
    """Write ``code`` as ``block.py`` and validate its class ``Block`` (``extra``: the options
    of :func:`nnrag.validate.stages.run_validation`, e.g. ``replay``)."""
    path = tmp_path / "block.py"
    path.write_text(code)
    result, _ = run_validation(
        path, block_id="t:block:Block", class_name="Block", sandbox=sandbox, **extra
    )
    return result


def check_block(
    sandbox: Sandbox, blocks: Path, name: str, replay: dict[str, Any] | None = None
) -> ValidationResult:
    """Validate class ``name`` of a file of several hand-made ``blocks`` through forward
    (with ``replay``: rerun exactly that recorded recipe)."""
    result, _ = run_validation(
        blocks,
        block_id=f"t:blocks:{name}",
        class_name=name,
        depth="forward",
        timeout_s=30.0,
        sandbox=sandbox,
        replay=replay,
    )
    return result


def passed_kwargs(result: ValidationResult) -> dict[str, Any]:
    """The constructor keyword arguments of a block that passed with a lossless recipe."""
    assert result.passed, result.message
    assert result.recipe is not None
    assert result.recipe.lossless, result.recipe.lossy
    return dict(result.recipe.init_kwargs)
