"""Per-method reachability helpers: dropping methods from a class chunk, plain classes."""

from __future__ import annotations

import ast

from nnrag.extract.lookups import looks_itself_up, only_wraps, prunable
from nnrag.extract.methods import drop_methods, torch_names


def _class(text: str) -> ast.ClassDef:
    node = ast.parse(text).body[0]
    assert isinstance(node, ast.ClassDef)
    return node


def test_drop_methods_removes_defs_decorators_and_their_blank_lines() -> None:
    chunk = (
        "# from pkg.m\n"
        "class A:\n"
        "    x = 1\n"
        "\n"
        "    @property\n"
        "    def size(self):\n"
        "        return 1\n"
        "\n"
        "    def keep(self):\n"
        "        return 2\n"
    )
    result = drop_methods(chunk, frozenset({"size"}))
    assert result == (
        "# from pkg.m\n"
        "# nnrag: methods left out (neither this block, torch nor Python calls them by name): "
        "size\n"
        "class A:\n    x = 1\n\n    def keep(self):\n        return 2\n"
    )
    compile(result, "<chunk>", "exec")


def test_drop_every_method_leaves_pass() -> None:
    chunk = (
        "class A:\n    def one(self):\n        return 1\n\n    def two(self):\n        return 2\n"
    )
    result = drop_methods(chunk, frozenset({"one", "two"}))
    assert result.splitlines()[-2:] == ["class A:", "    pass"]
    assert result.startswith("# nnrag: methods left out")
    assert "one, two" in result
    namespace: dict[str, object] = {}
    exec(compile(result, "<chunk>", "exec"), namespace)
    assert isinstance(namespace["A"], type)


def test_drop_methods_keeps_a_chunk_that_does_not_parse() -> None:
    chunk = "class A:\n    def one(self):\n  return 1\n"
    assert drop_methods(chunk, frozenset({"one"})) == chunk


def test_prunable_methods_exclude_dunders_sunders_abstract_and_registering_decorators() -> None:
    node = _class(
        "class A:\n"
        "    def __call__(self): pass\n"
        "    def _missing_(self): pass\n"
        "    @abc.abstractmethod\n"
        "    def must(self): pass\n"
        "    @hooks.register('x')\n"
        "    def hooked(self): pass\n"
        "    @staticmethod\n"
        "    def plain(): pass\n"
        "    @size.setter\n"
        "    def size(self, v): pass\n"
    )
    names = {stmt.name for stmt in node.body if prunable(stmt)}  # type: ignore[attr-defined]  # every statement of the class is a def
    assert names == {"plain", "size"}


def test_a_class_that_looks_its_own_attributes_up_is_not_plain() -> None:
    assert looks_itself_up(
        _class("class A:\n    def f(self, n):\n        return getattr(self, n)\n")
    )
    assert looks_itself_up(_class("class A:\n    def f(self):\n        return dir(self)\n"))
    assert looks_itself_up(
        _class("class A:\n    def f(self, n):\n        return getattr(type(self), n)\n")
    )
    assert not looks_itself_up(
        _class("class A:\n    def f(self):\n        return getattr(self, 'g')()\n")
    )
    assert not looks_itself_up(
        _class("class A:\n    def f(self, other, n):\n        return getattr(other, n)\n")
    )


def test_the_comment_names_every_left_out_method_above_the_decorators() -> None:
    chunk = "@dataclass\nclass A:\n" + "".join(
        f"    def method_number_{i}(self):\n        return {i}\n\n" for i in range(12)
    )
    names = frozenset(f"method_number_{i}" for i in range(12)) | {"not_a_method_here"}
    result = drop_methods(chunk, names)
    comment = [line for line in result.splitlines() if line.startswith("#")]
    assert len(comment) > 1
    assert all(len(line) <= 96 for line in comment)
    listed = " ".join(comment).split("by name): ", 1)[1].replace("#", " ")
    assert sorted(n.strip() for n in listed.split(",")) == sorted(names - {"not_a_method_here"})
    assert result.splitlines()[len(comment)] == "@dataclass"
    compile(result, "<chunk>", "exec")


def test_torch_names_come_from_the_generated_table() -> None:
    module, classes = torch_names()
    # nn.Module defines these and calls extra_repr / _load_from_state_dict by name
    assert {"forward", "extra_repr", "_load_from_state_dict", "state_dict", "_apply"} <= module
    assert not {"from_pretrained", "save_pretrained", "push_to_hub"} & module
    # nn.Conv2d.__init__ calls reset_parameters, forward calls _conv_forward
    assert {"reset_parameters", "_conv_forward"} <= classes["torch.nn.modules.conv.Conv2d"]


def test_a_module_class_keeps_the_methods_torch_calls_by_name() -> None:
    node = _class(
        "class M(nn.Module):\n"
        "    def forward(self, x): pass\n"
        "    def extra_repr(self): pass\n"
        "    @classmethod\n"
        "    def from_pretrained(cls, name): pass\n"
        "    def save_pretrained(self, path): pass\n"
    )
    module = frozenset({"forward", "extra_repr"})
    names = {s.name for s in node.body if prunable(s, module)}  # type: ignore[attr-defined]  # every statement of the class is a def
    assert names == {"from_pretrained", "save_pretrained"}


def _def(text: str) -> ast.stmt:
    return ast.parse(text).body[0]


def test_a_decorator_that_only_wraps_keeps_its_function_nowhere() -> None:
    wraps = _def(
        "def restore(func):\n"
        "    @functools.wraps(func)\n"
        "    def inner(*a, **k):\n"
        "        print(func.__name__)\n"
        "        return func(*a, **k)\n"
        "    return inner\n"
    )
    assert only_wraps(wraps)
    assert only_wraps(_def("def same(fn):\n    return fn\n"))
    for registering in (
        "def reg(fn):\n    HOOKS.append(fn)\n    return fn\n",
        "def reg(fn):\n    TABLE[fn.__name__] = fn\n    return fn\n",
        "def mark(fn):\n    fn._exported = True\n    return fn\n",
        "def other(fn):\n    return helper(fn)\n",
        "def factory(name, fn):\n    return fn\n",
    ):
        assert not only_wraps(_def(registering)), registering


def test_a_module_class_looks_itself_up_only_through_the_class_or_a_computed_name() -> None:
    overrides = _class("class M:\n    def __getattr__(self, name):\n        return 1\n")
    assert not looks_itself_up(overrides, module=True)  # only sees names the class lacks
    instance = _class("class M:\n    def f(self):\n        return self.__dict__['x']\n")
    assert not looks_itself_up(instance, module=True)  # instance attributes, no methods
    klass = _class("class M:\n    def f(self):\n        return type(self).__dict__.items()\n")
    assert looks_itself_up(klass, module=True)
    one = _class("class M:\n    def f(self):\n        return type(self).__dict__['x']\n")
    assert not looks_itself_up(one, module=True)  # one known key
    assert looks_itself_up(_class("class M:\n    def f(self):\n        return vars(self)\n"))


def test_a_name_held_in_an_attribute_is_not_computed_in_a_module_class() -> None:
    held = _class(
        "class M:\n"
        "    prefix = 'bert'\n"
        "    def f(self):\n"
        "        name = getattr(self, '_layer', 'embed')\n"
        "        return getattr(self, self.prefix, self), getattr(self, name, None)\n"
        "    def g(self, mode):\n"
        "        base = getattr(self, 'prefix', None)\n"
        "        base = getattr(self, base, None)\n"
        "        return getattr(type(self), MODES[mode]), cls.__dict__.get('config')\n"
    )
    assert not looks_itself_up(held, module=True)
    assert not looks_itself_up(held)  # the same for a plain class
    for computed in (
        "def f(self, name):\n        return getattr(self, name)\n",
        "def f(self, names):\n        for name in names:\n            getattr(self, name)()\n",
        "def f(self, **kw):\n        for name, v in kw.items():\n"
        "            getattr(self, name)()\n",
        "def f(self, i):\n        return getattr(self, f'layer{i}')\n",
        "def f(self):\n        name = self.prefix + 'x'\n        return getattr(self, name)\n",
        "def f(self, key):\n        return type(self).__dict__[key]\n",
    ):
        assert looks_itself_up(_class(f"class M:\n    {computed}"), module=True), computed


def test_type_tests_are_chains_read_only_by_isinstance_or_in_annotations() -> None:
    from nnrag.extract.syntax import type_tests

    tree = ast.parse(
        "def f(x: Config, y: 'Other') -> Union[Box, None]:\n"
        "    if isinstance(x, (Tested, mod.Deep)) or issubclass(type(x), Sub):\n"
        "        return Built(x)\n"
        "    return isinstance(x, Built)\n"
    )
    # a function's parameter annotation (Config) is a type test: its callers build it
    assert type_tests(tree) == frozenset({"Union", "Box", "Tested", "mod.Deep", "Sub", "Config"})
    method = ast.parse(
        "class M:\n    def __init__(self, cfg: Config, *a: Rest) -> None:\n        pass\n"
    )
    # a method's parameter annotation is what whoever builds the block passes: not a test
    assert type_tests(method) == frozenset()
    fields = ast.parse(
        "class Cfg:\n    stem: StemCfg\n\ndef f():\n    local: Local = make()\n    return local\n"
    )
    # a class-body annotation is a field (dataclass, NamedTuple): built, not a type test
    assert type_tests(fields) == frozenset({"Local"})


def test_a_decorator_keeps_its_argument_only_where_code_finds_it_without_its_name() -> None:
    from nnrag.extract.lookups import keeps_argument

    for wrapping in (
        "def doc(fn):\n    fn.__doc__ = (fn.__doc__ or '') + 'x'\n    return fn\n",
        "def check(fn):\n"
        "    @wraps(fn)\n"
        "    def inner(*args, **kwargs):\n"
        "        kwargs['token'] = kwargs.pop('use_auth_token', None)\n"
        "        kwargs.update(extra=1)\n"
        "        return fn(*args, **kwargs)\n"
        "    return inner\n",
        "def deprecate(old, new=None):\n"
        "    def decorator(func):\n"
        "        def wrapped(*args, **kwargs):\n"
        "            return func(*args, **kwargs)\n"
        "        wrapped.__wrapped__ = func\n"
        "        return wrapped\n"
        "    return decorator\n",
    ):
        assert not keeps_argument(_def(wrapping)), wrapping
    for keeping in (
        "def reg(fn):\n    HOOKS.append(fn)\n    return fn\n",
        "def reg(fn):\n    TABLE[fn.__name__] = fn\n    return fn\n",
        "def mark(fn):\n    fn._exported = True\n    return fn\n",
        "def into(table):\n    def deco(fn):\n        table[fn.__name__] = fn\n"
        "        return fn\n    return deco\n",
        "def last(fn):\n    global LAST\n    LAST = fn\n    return fn\n",
        "def hook(fn):\n    REGISTRY.register_hook(fn)\n    return fn\n",
        "def attach(fn):\n    setattr(HOLDER, 'f', fn)\n    return fn\n",
    ):
        assert keeps_argument(_def(keeping)), keeping


def test_a_method_with_a_wrapping_decorator_is_prunable_when_the_caller_says_so() -> None:
    node = _class(
        "class A:\n"
        "    @classmethod\n"
        "    @validate_args\n"
        "    def from_pretrained(cls, name): pass\n"
        "    @hooks.register('x')\n"
        "    def hooked(self): pass\n"
        "    @abc.abstractmethod\n"
        "    def must(self): pass\n"
    )
    names = {s.name for s in node.body if prunable(s, None, frozenset({"hooked"}))}  # type: ignore[attr-defined]  # every statement of the class is a def
    assert names == {"from_pretrained"}


def test_an_attribute_hook_override_sees_only_spelled_names() -> None:
    mapped = _class(
        "class C:\n"
        "    def __getattribute__(self, key):\n"
        "        if key in super().__getattribute__('attribute_map'):\n"
        "            key = super().__getattribute__('attribute_map')[key]\n"
        "        return super().__getattribute__(key)\n"
        "    def __setattr__(self, key, value):\n"
        "        super().__setattr__(key, value)\n"
    )
    assert not looks_itself_up(mapped)
    assert not looks_itself_up(mapped, module=True)
    computed = _class(
        "class C:\n"
        "    def __getattribute__(self, key):\n"
        "        return super().__getattribute__(f'get_{key}')\n"
    )
    assert looks_itself_up(computed)
    unbound = _class(
        "class C:\n    def f(self, n):\n        return object.__getattribute__(self, n)\n"
    )
    assert looks_itself_up(unbound)


def test_what_a_computed_lookup_of_itself_reaches() -> None:
    from nnrag.extract.lookups import self_lookups

    def reach(body: str) -> str | None:
        return self_lookups(_class(f"class M:\n    {body}"))

    # setting or testing an instance attribute by a computed name runs property code only
    assert (
        reach(
            "def f(self, **kw):\n        for k, v in kw.items():\n            setattr(self, k, v)\n"
        )
        == "properties"
    )
    assert reach("def f(self, k):\n        return hasattr(self, k)\n") == "properties"
    assert reach("def f(self, k):\n        return isinstance(getattr(self, k), int)\n") == (
        "properties"
    )
    assert reach(
        "def f(self, k):\n        old = getattr(self, k)\n"
        "        if old is None or isinstance(old, str):\n            return 1\n"
    ) == ("properties")
    # keys of the instance's own __dict__ (or of a method's copy of it) name instance attributes
    assert (
        reach(
            "def to_dict(self):\n        out = copy.deepcopy(self.__dict__)\n"
            "        out['kind'] = 'm'\n        for k, v in out.items():\n            out[k] = v\n"
            "        return out\n"
            "    def f(self):\n        d = self.to_dict()\n        for key, value in d.items():\n"
            "            use(getattr(self, key, None))\n"
        )
        == "properties"
    )
    # names from a tuple of strings, a class attribute, or only None are held
    assert (
        reach("def f(self):\n        for n in ('a', 'b'):\n            use(getattr(self, n))\n")
        is None
    )
    assert (
        reach(
            "def f(self):\n        for n in self.sub_configs:\n            use(getattr(self, n))\n"
        )
        is None
    )
    assert reach("def f(self):\n        n = None\n        return getattr(self, n)\n") is None
    # a value that escapes, a dict that gains computed keys, a class target: any method
    assert reach("def f(self, k):\n        return getattr(self, k)\n") == "whole"
    assert (
        reach(
            "def to_dict(self):\n        out = dict(self.__dict__)\n        out[self.k] = 1\n"
            "        return out\n"
            "    def f(self):\n        for key in self.to_dict():\n"
            "            use(getattr(self, key))\n"
        )
        == "whole"
    )
    assert reach("def f(cls, k, v):\n        setattr(cls, k, v)\n") == "whole"
