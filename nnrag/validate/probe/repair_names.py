"""Runs in the sandbox child: constructor repairs that read argument names, options and sizes
from the error message, the failing source line and the file's own classes."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import os
import re
import sys
import traceback
import typing
from typing import Any

from torch import nn

from nnrag.validate.probe.args import Synth
from nnrag.validate.probe.ctor import Ctor
from nnrag.validate.probe.profiles import MISSING, PROFILES, int_for
from nnrag.validate.probe.registries import Carried
from nnrag.validate.probe.signatures import (
    init_signature,
    signature_of,
    type_hints,
    value_choices,
)

_PROBE_DIR = os.path.dirname(os.path.abspath(__file__))


def failing_line(error: BaseException) -> str:
    """The source line that raised ``error`` (empty when unknown), skipping the probe's own
    frames (the harvest's ``__init__`` wrappers sit between a call and a binding error)."""
    frames = [
        f
        for f in traceback.extract_tb(error.__traceback__)
        if os.path.dirname(os.path.abspath(f.filename)) != _PROBE_DIR
    ]
    return (frames[-1].line or "") if frames else ""


def _with(
    ctor: Ctor,
    changed: dict[str, object],
    placeholders: list[str] | None = None,
    *,
    real: bool = True,
) -> Ctor:
    """``ctor`` with ``changed`` arguments; a ``real`` value replaces a placeholder's name."""
    kept = [p for p in ctor.placeholders if not real or p not in changed]
    return Ctor(
        "synthesized",
        ctor.args,
        {**ctor.kwargs, **changed},
        [*kept, *(placeholders or [])],
        ctor.profile,
        ctor.inputs,
    )


def _takes_kwargs(sig: inspect.Signature | None) -> bool:
    return sig is not None and any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())


_MISSING_ARGS = re.compile(r"missing \d+ required (?:positional|keyword-only) arguments?: (.+)")


def add_missing(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: "missing 1 required positional argument: 'kernel_size'" of a layer built from
    ``**kwargs`` adds the named arguments, synthesized by name."""
    m = _MISSING_ARGS.search(str(error))
    if ctor.origin != "synthesized" or m is None:
        return None
    sig, _ = init_signature(cls)
    params = sig.parameters if sig else {}
    synth = Synth(sys.modules.get(cls.__module__), ctor.profile or PROFILES[0])
    if re.findall(r"'(\w+)'", m.group(1)) == ["self"]:  # a class was passed for an instance
        built = {
            k: synth.build(v)
            for k, v in ctor.kwargs.items()
            if isinstance(v, type) and issubclass(v, nn.Module)
        }
        made = {k: v for k, v in built.items() if v is not MISSING}
        return _with(ctor, made, synth.placeholders, real=False) if made else None
    choices = value_choices(cls)  # ``depth`` checked against ``self.arch_settings``
    added = {
        name: choices[name] if name in choices else _missing_value(synth, cls, name)
        for name in re.findall(r"'(\w+)'", m.group(1))
        if name not in ctor.kwargs and (name in params or _takes_kwargs(sig))
    }
    return _with(ctor, added, synth.placeholders) if added else None


def _missing_value(synth: Synth, cls: type, name: str) -> object:
    """A value for a required parameter ``cls`` takes through ``**kwargs``: by the annotation
    the base that declares it gives (``layer_cfg: ConfigType``), else by its name."""
    for base in getattr(cls, "__mro__", ())[1:]:
        sig = signature_of(vars(base).get("__init__"))
        param = sig.parameters.get(name) if sig is not None else None
        if param is not None:
            hint = type_hints(sig, vars(base)["__init__"]).get(name, param.annotation)
            return synth.parameter(cls, name, hint)
    return synth.by_name(name)


def add_key(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: ``KeyError: 'drop_path_rate'`` of a plain dict argument (a nested config read
    by subscript, ``extra['drop_path_rate']``) adds the key, synthesized by its name, to the
    dict arguments that lack it (not to ``dict(type=...)`` configs: their keys go to a class)."""
    if not (isinstance(error, KeyError) and error.args and isinstance(error.args[0], str)):
        return None
    key = error.args[0]
    if not key.isidentifier() or key in _strings([ctor.args, ctor.kwargs]):
        return None  # a value the call gave, looked up in a table: not a missing key
    synth = Synth(sys.modules.get(cls.__module__), ctor.profile or PROFILES[0])
    value = synth.by_name(key)

    def added(v: object) -> object:
        if type(v) is dict and key not in v and "type" not in v:
            return {**v, key: value}
        return v

    args = tuple(added(a) for a in ctor.args)
    kwargs = {k: added(v) for k, v in ctor.kwargs.items()}
    if args == ctor.args and kwargs == ctor.kwargs:
        return None
    placeholders = [*ctor.placeholders, *synth.placeholders]
    return Ctor(ctor.origin, args, kwargs, placeholders, ctor.profile, ctor.inputs)


def _strings(value: object) -> set[str]:
    """The strings inside nested lists, tuples and dict values."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return {s for item in value for s in _strings(item)}
    return set()


def fill_mentioned(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: arguments the message names that were left at ``None`` or ``0`` get a value.

    "norm_layer must be provided if qk_norm ..." sets ``norm_layer``; a quoted name that the
    class only takes through ``**kwargs`` ("Argument `num_layers` must be given") is added too.
    """
    if ctor.origin != "synthesized":
        return None
    text = str(error)
    sig, owner = init_signature(cls)
    params = sig.parameters if sig else {}
    hints = type_hints(sig, owner)
    words = set(re.findall(r"[A-Za-z_]\w*", text))
    asks = re.search(r"must be (given|provided|set|specified)|required|please|pass ", text, re.I)
    quoted = set(re.findall(r"[`'\"](\w+)[`'\"]", text)) if asks and _takes_kwargs(sig) else set()
    synth = Synth(sys.modules.get(cls.__module__), ctor.profile or PROFILES[0])
    added: dict[str, object] = {}
    for name in sorted(words & set(params)):
        default = params[name].default
        if name in ctor.kwargs or not (default is None or (default == 0 and default is not False)):
            continue
        value = synth.parameter(cls, name, hints.get(name, params[name].annotation))
        if value is not None:
            added[name] = value
    for name in sorted(quoted - set(params) - set(ctor.kwargs)):
        if "_" in name:  # argument-like names only, not words of the sentence
            added[name] = synth.by_name(name)
    return _with(ctor, added, synth.placeholders) if added else None


_CHOICE = re.compile(
    r"(?:must be|one of|either|expected|choose from|choices|valid|supported)(.*)", re.I
)


def choose_option(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: "partition_type must be either 'grid' or 'window'" sets the named string argument
    to the first option the message lists; so does "Unsupported option 'LAYERNORM', available
    options are {...}", which quotes the argument's value (in any case) instead of its name."""
    if ctor.origin != "synthesized":
        return None
    text = str(error)
    m = _CHOICE.search(text)
    if m is None:
        return None
    tail = re.split(r"\bgot\b|\bbut\b", m.group(1))[0]
    options = [o for o in re.findall(r"'([^']*)'|\"([^\"]*)\"", tail) for o in o if o]
    if "{" in tail:  # a set's order is not stable from run to run
        options = sorted(options)
    if not options:
        options = [w for w in re.findall(r"[A-Za-z_][\w-]*", tail) if w not in {"or", "and"}]
    for name, value in ctor.kwargs.items():
        if not isinstance(value, str) or not (
            re.search(rf"\b{re.escape(name)}\b", text)
            or (value and re.search(rf"['\"]{re.escape(value)}['\"]", text, re.I))
        ):
            continue
        fresh = [
            o for o in options if o.lower() != value.lower() and o not in {"None", "be", "a", "the"}
        ]
        if fresh:
            return _with(ctor, {name: fresh[0]})
    return None


_LENGTH = re.compile(r"(?:length|list of|len\w*|size)\D{0,24}?(\d+)")


def resize(ctor: Ctor, error: BaseException) -> Ctor | None:
    """Repair: "p_stochastic must have length n_layers=1" resizes the named list arguments."""
    text = str(error)
    m = _LENGTH.search(text)
    if ctor.origin != "synthesized" or m is None:
        return None
    want = int(m.group(1))
    changed: dict[str, object] = {}
    for name, value in ctor.kwargs.items():
        if not isinstance(value, (list, tuple)) or not value:
            continue
        if not re.search(rf"\b{re.escape(name)}\b", text):
            continue
        size = want if len(value) != want else len(value) + 1
        if not 0 < size <= 8:
            continue
        items = [*value[:size], *[value[-1]] * (size - len(value))]
        changed[name] = tuple(items) if isinstance(value, tuple) else items
    return _with(ctor, changed) if changed else None


_NO_ATTR = re.compile(r"type object '(\w+)' has no attribute '(\w+)'")
_CALLED = re.compile(r"(\w+)\.forward\(\) got an unexpected keyword argument")


def swap_class(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: a class argument that lacks a class attribute (``block.expansion``) becomes a
    module class of the file that has it; an instance called like a class becomes its class."""
    if ctor.origin != "synthesized":
        return None
    text = str(error)
    changed: dict[str, object] = {}
    called = _CALLED.search(text)
    if called is not None:
        changed = {
            k: type(v)
            for k, v in ctor.kwargs.items()
            if isinstance(v, nn.Module) and type(v).__name__ == called.group(1)
        }
    missing = _NO_ATTR.search(text)
    module = sys.modules.get(cls.__module__)
    if missing is not None and module is not None:
        owner, attr = missing.groups()
        having = [
            v
            for v in vars(module).values()
            if isinstance(v, type)
            and issubclass(v, nn.Module)
            and v.__module__ == module.__name__
            and any(attr in vars(k) for k in v.__mro__ if k is not nn.Module)
        ]
        if having:
            changed = {
                k: having[0]
                for k, v in ctor.kwargs.items()
                if isinstance(v, type) and v.__name__ == owner
            }
    return _with(ctor, changed) if changed else None


_SET = re.compile(r"set [`'\"]?(\w+)\s*=\s*(True|False|None|-?\d+(?:\.\d+)?|'\w*')")


def set_value(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: "... set `add_self_loops=False`" sets the argument the message asks for."""
    m = _SET.search(str(error))
    if ctor.origin != "synthesized" or m is None:
        return None
    name, value = m.group(1), ast.literal_eval(m.group(2))
    sig, _ = init_signature(cls)
    if sig is None or (name not in sig.parameters and not _takes_kwargs(sig)):
        return None
    return _with(ctor, {name: value}) if ctor.kwargs.get(name, MISSING) != value else None


_SETTING = re.compile(r"\b(\w+)\s*=\s*(True|False|None|-?\d+(?:\.\d+)?|'\w*')")


def set_config_value(ctor: Ctor, error: BaseException) -> Ctor | None:
    """Repair: an assertion quoting a setting (``Dictionary must contain an end token!
    (with_end=True)``) that the class of a registry config dict argument takes sets it in
    that dict (``dictionary=dict(type='Dictionary', ..., with_end=True)``)."""
    found = _SETTING.search(str(error)) if isinstance(error, AssertionError) else None
    if ctor.origin != "synthesized" or found is None:
        return None
    name, value = found.group(1), ast.literal_eval(found.group(2))
    changed: dict[str, object] = {}
    for argument, config in ctor.kwargs.items():
        kind = config.get(Carried.key) if isinstance(config, dict) else None
        built = next((t[kind] for t in Carried.tables.values() if kind in t), None)
        sig = init_signature(built)[0] if isinstance(kind, str) and built is not None else None
        takes = sig is not None and (name in sig.parameters or _takes_kwargs(sig))
        if isinstance(config, dict) and takes and config.get(name, MISSING) != value:
            changed[argument] = {**config, name: value}
    return _with(ctor, changed) if changed else None


_ORDER = re.compile(r"\(?(\w+)\)? must be (smaller|less|lower|larger|greater|bigger) than")


def order_sizes(ctor: Ctor, error: BaseException) -> Ctor | None:
    """Repair: "(dim_pe_out) must be smaller than ... (dim_emb)" halves (or doubles) the first."""
    text = str(error)
    m = _ORDER.search(text)
    if ctor.origin != "synthesized" or m is None:
        return None
    name = m.group(1)
    value = ctor.kwargs.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 2:
        return None
    smaller = m.group(2) in {"smaller", "less", "lower"}
    return _with(ctor, {name: value // 2 if smaller else value * 2})


_NONE_USED = re.compile(
    r"'NoneType' object is not (subscriptable|iterable)|'NoneType' has no len|"
    r"type\(s\) for [^:]*: 'NoneType'"
)


def fill_none_sequences(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: sequence arguments that default to ``None`` but were indexed get a value."""
    if ctor.origin != "synthesized" or not _NONE_USED.search(str(error)):
        return None
    sig, owner = init_signature(cls)
    hints = type_hints(sig, owner)
    synth = Synth(sys.modules.get(cls.__module__), ctor.profile or PROFILES[0])
    added: dict[str, object] = {}
    for name, param in sig.parameters.items() if sig else ():
        if dataclasses.is_dataclass(param.default) and name not in ctor.kwargs:
            config = _filled_config(param.default, synth)
            if config is not None:
                added[name] = config
        if param.default is not None or name in ctor.kwargs:
            continue
        annotation = hints.get(name, param.annotation)
        if not re.search(r"List|Tuple|Sequence|list|tuple|int|float", str(annotation)):
            continue
        value = synth.value(name, annotation)
        if value is not None and not isinstance(value, bool):
            added[name] = value
    return _with(ctor, added, synth.placeholders) if added else None


def _filled_config(config: Any, synth: Synth) -> object | None:
    """A copy of a defaulted config dataclass with its ``None`` size fields filled."""
    try:
        hints = typing.get_type_hints(type(config))
    except Exception:
        hints = {}
    filled: dict[str, object] = {}
    for item in dataclasses.fields(config):
        if getattr(config, item.name) is None and _SIZE_NAMES_WIDE.search(item.name):
            value = synth.value(item.name, hints.get(item.name, inspect.Parameter.empty))
            if value is not None:
                filled[item.name] = value
    if not filled:
        return None
    try:
        copy: object = dataclasses.replace(config, **filled)
    except Exception:
        return None
    return copy


_SIZE_NAMES_WIDE = re.compile(r"size|window|grid|partition|dim|resolution|len")


def whole_floats(ctor: Ctor, error: BaseException) -> Ctor | None:
    """Repair: "must be tuple of ints, but found element of type float" makes whole floats ints."""
    if ctor.origin != "synthesized" or not re.search(
        r"of ints, but found element of type float|'float' object cannot be interpreted as an int",
        str(error),
    ):
        return None
    changed: dict[str, object] = {
        k: int(v) for k, v in ctor.kwargs.items() if isinstance(v, float) and v.is_integer() and v
    }
    return _with(ctor, changed) if changed else None


_UNPACK = re.compile(r"not enough values to unpack \(expected (\d+), got (\d+)\)")


def unpack_items(ctor: Ctor, error: BaseException) -> Ctor | None:
    """Repair: "not enough values to unpack (expected 5, got 2)" pads the innermost lists."""
    m = _UNPACK.search(str(error))
    if ctor.origin != "synthesized" or m is None:
        return None
    want, got = int(m.group(1)), int(m.group(2))

    def pad(value: object) -> object:
        if not isinstance(value, (list, tuple)):
            return value
        if value and all(not isinstance(v, (list, tuple)) for v in value):
            if len(value) != got:
                return value
            items = [*value, *[value[-1]] * (want - got)]
            return tuple(items) if isinstance(value, tuple) else items
        padded = [pad(v) for v in value]
        return tuple(padded) if isinstance(value, tuple) else padded

    changed = {k: pad(v) for k, v in ctor.kwargs.items() if isinstance(v, (list, tuple))}
    changed = {k: v for k, v in changed.items() if v != ctor.kwargs[k]}
    return _with(ctor, changed) if changed else None


def expected_class(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: "Expected 'Linear' module (got Identity)" builds the named class of the file for
    the placeholder argument."""
    module = sys.modules.get(cls.__module__)
    if ctor.origin != "synthesized" or module is None or not ctor.placeholders:
        return None
    wanted = [
        v
        for name in re.findall(r"'(\w+)'", str(error))
        if isinstance(v := vars(module).get(name), type)
        and issubclass(v, nn.Module)
        and v is not cls
        and v.__module__ == module.__name__
    ]
    if not wanted:
        return None
    synth = Synth(module, ctor.profile or PROFILES[0], depth=1)
    changed: dict[str, object] = {}
    for name, value in ctor.kwargs.items():
        if name not in ctor.placeholders:
            continue
        if isinstance(value, type):
            changed[name] = wanted[0]
        elif isinstance(value, nn.Identity):
            built = synth.build(wanted[0])
            if built is not MISSING:
                changed[name] = built
    return _with(ctor, changed, synth.placeholders) if changed else None


def equal_widths(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: "in_channels must be divisible by groups" sets defaulted widths (``embed_dim=768``)
    to the synthesized width, so grouped layers between them line up."""
    if ctor.origin != "synthesized" or "divisible" not in str(error):
        return None
    profile = ctor.profile or PROFILES[0]
    given = [
        v
        for k, v in ctor.kwargs.items()
        if isinstance(v, int) and not isinstance(v, bool) and int_for(k, profile) == profile.dim
    ]
    if not given:
        return None
    width = max(set(given), key=given.count)
    sig, _ = init_signature(cls)
    changed: dict[str, object] = {
        name: width
        for name, param in (sig.parameters.items() if sig else ())
        if name not in ctor.kwargs
        and isinstance(param.default, int)
        and not isinstance(param.default, bool)
        and param.default > width
        and int_for(name, profile) == profile.dim
        and re.search(r"dim|chan|chs|width|planes|features", name)
    }
    return _with(ctor, changed) if changed else None


def _argument_name(node: ast.expr) -> str:
    """``norm`` of ``norm`` or ``self.norm``, else empty."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == "self":
        return node.attr
    return ""


def assert_condition(ctor: Ctor, cls: type, error: BaseException) -> Ctor | None:
    """Repair: a bare ``assert norm`` or ``assert norm is not None`` on a defaulted constructor
    argument, or on ``self.norm`` where a parameter has that name (kept by ``self.norm =
    norm`` or by a helper handed ``locals()``), gives it a synthesized value (the other tests
    of an ``assert``: :mod:`nnrag.validate.probe.init_asserts`)."""
    if ctor.origin != "synthesized" or not isinstance(error, AssertionError):
        return None
    try:
        statement = ast.parse(failing_line(error).strip()).body[0]
    except (SyntaxError, IndexError):
        return None
    if not isinstance(statement, ast.Assert):
        return None
    test = statement.test
    sig, owner = init_signature(cls)
    params = sig.parameters if sig else {}
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        test = test.left
    name = _argument_name(test)
    if name not in params or name in ctor.kwargs:
        return None
    synth = Synth(sys.modules.get(cls.__module__), ctor.profile or PROFILES[0])
    hint = type_hints(sig, owner).get(name, params[name].annotation)
    value = synth.parameter(cls, name, hint)
    return _with(ctor, {name: value}, synth.placeholders) if value else None


def name_repairs(ctor: Ctor, cls: type, error: BaseException) -> list[Ctor]:
    """Every repair above that applies to ``error``."""
    found = (
        set_value(ctor, cls, error),
        set_config_value(ctor, error),
        order_sizes(ctor, error),
        fill_none_sequences(ctor, cls, error),
        whole_floats(ctor, error),
        unpack_items(ctor, error),
        add_missing(ctor, cls, error),
        add_key(ctor, cls, error),
        fill_mentioned(ctor, cls, error),
        choose_option(ctor, cls, error),
        resize(ctor, error),
        swap_class(ctor, cls, error),
        expected_class(ctor, cls, error),
        equal_widths(ctor, cls, error),
        assert_condition(ctor, cls, error),
    )
    return [c for c in found if c is not None]
