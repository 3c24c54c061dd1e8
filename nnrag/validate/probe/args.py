"""Sandbox child: constructor arguments synthesized by annotation, name and usage (configs too)."""

from __future__ import annotations

import enum
import inspect
import numbers
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from nnrag.validate.probe import values as probe_values
from nnrag.validate.probe.annotations import (
    is_config_type,
    is_duck_union,
    is_int,
    is_mapping_type,
    nothing_to_configure,
    preferred_member,
)
from nnrag.validate.probe.configs import (
    build_small,
    fill_missing,
    give_keys,
    key_fields,
    shrink_parts,
)
from nnrag.validate.probe.ducks import (
    as_class,
    class_annotation,
    class_with_attributes,
    module_with_attributes,
    stand_in_class,
    stand_in_module,
    wanted,
)
from nnrag.validate.probe.factories import factory_for, none_accepted
from nnrag.validate.probe.kinds import (
    default_dicts,
    kind_score,
    named_tables,
    of_another_kind,
    ranked_classes,
)
from nnrag.validate.probe.leaf_values import LINEAR_NAMES, LeafValues
from nnrag.validate.probe.mapping_values import MappingValues
from nnrag.validate.probe.profiles import MISSING, Profile, float_for, int_for
from nnrag.validate.probe.registries import Carried
from nnrag.validate.probe.signatures import (
    CONFIG_CLASSES,
    concrete_modules,
    config_class_for,
    find_config_class,
    init_signature,
    named_class,
    stage_lengths,
    type_hints,
    value_choices,
)
from nnrag.validate.probe.structured import kept_for_later, keyed, output_keys, spread_bounds
from nnrag.validate.probe.usage import (
    Access,
    access_tree,
    is_nested,
    parameter_usage,
    parameter_use,
)

call = probe_values.call
remember = probe_values.remember
encode = probe_values.encode


_FLOAT_FIELDS = re.compile(r"eps|drop|prob|momentum|temperature|_rate$|_ratio$")
"""Config fields that are numbers even where their name also says a kind (``layer_norm_eps``)."""
_SWITCH_FIELDS = re.compile(r"^(add|output|return|tie|use|is|has|with|do)_")
"""Config fields that switch a feature on (off when synthesized: the plain path)."""
_CONFIG_NAMES = re.compile(r"config|cfg|conf$|args$|^opt|hparams|params$")

_LAYER_WORD = re.compile(r"(?:^|_)(act|activation|norm|normalization)(?:_|$)")
"""A word that names a kind of torch layer (``act_layer``, ``norm``): the word itself, not
letters inside another (``scale_factor``, ``normalized_shape`` are sizes)."""
_LAYER_FACTORY_NAMES = re.compile(rf"{_LAYER_WORD.pattern}|layer$|_fn$|^fn$")
"""Parameters that take a layer class or factory (``act_layer``, ``norm``, ``block_fn``)."""

_KIND_SKIP = {"types", "type", "cls", "class", "fn", "factory", "constructor", "builder"}

_KEY_NAMES = re.compile(r"type|key|name|metadata|node|edge|relation")
_COUNTS = ("num_", "n_", "number_of_")
"""Prefixes of a parameter that counts things (``num_numerical_types``): an integer."""
"""Sequences of strings under these names are keys: they must be distinct and non-empty."""


class Synth(LeafValues, MappingValues):
    """Synthesizes values for required parameters from annotations and names."""

    def __init__(self, module: Any, profile: Profile, depth: int = 0) -> None:
        self.module = module
        self.profile = profile
        self.depth = depth
        self.placeholders: list[str] = []
        self.applied: set[str] = set()
        """Callable parameters the constructor keeps to apply in forward (not factories)."""

    def value(self, name: str, annotation: Any) -> object:
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if annotation is inspect.Parameter.empty or annotation is Any:
            return self.by_name(name)
        if origin is typing.Union or type(annotation).__name__ == "UnionType":
            options = [a for a in args if a is not type(None)]
            if not options or (len(options) < len(args) and not self.runnable(options)):
                return None  # ``Optional[Base]`` with no runnable ``Base``: the block's own case
            if is_duck_union(options):
                return self.by_name(name)  # ``num_channels: ArrayLike``: the name says more
            return self.value(name, preferred_member(options))
        if origin is typing.Literal:
            return next((a for a in args if a is not None), args[0])
        if origin in (tuple, typing.Tuple):  # noqa: UP006 - runtime check of old spellings
            items = [a for a in args if a is not Ellipsis] or [int]
            if len(items) == 3 and Ellipsis not in args and all(i is str for i in items):
                return ("a", "to", "a")  # a (source, relation, target) key
            count = len(items) if Ellipsis not in args else 2
            return tuple(self.item(name, items[min(i, len(items) - 1)], i) for i in range(count))
        if origin in (list, list, typing.Sequence) or (
            origin is not None and getattr(origin, "__name__", "") in {"Sequence", "Iterable"}
        ):
            inner = args[0] if args else int
            return [self.item(name, inner, i) for i in range(2)]
        if (
            origin is not None and getattr(origin, "__name__", "") == "Callable"
        ) or annotation is Callable:
            returned = args[-1] if args else None
            if isinstance(returned, type) and issubclass(returned, nn.Module):
                return self.class_for(name, returned)  # a class is a module factory
            return self.layer_factory(name)
        if origin is type and args:
            return self.class_for(name, args[0])
        if origin is not None and getattr(origin, "__name__", "") in {"dict", "Mapping"}:
            if len(args) != 2:
                return self.container(name, dict)
            key, item = args
            return {self.value(name, key) if key is not str else "0": self.value(name, item)}
        if annotation in (tuple, list) or (
            isinstance(annotation, type) and issubclass(annotation, Mapping)
        ):
            return self.container(name, annotation)
        if annotation is bool:
            return False
        if annotation is int:
            value = int_for(name, self.profile)
            return self.profile.dim if value is MISSING else value
        if annotation is float:
            return float_for(name)
        if annotation is str:
            return self.string_for(name)
        if annotation is torch.dtype:
            return torch.float32
        if annotation is torch.device:
            return torch.device("cpu")
        if isinstance(annotation, type) and issubclass(annotation, torch.Tensor):
            return self.tensor(name)
        if isinstance(annotation, type) and issubclass(annotation, numbers.Number):
            value = int_for(name, self.profile)
            return float_for(name) if value is MISSING else value
        if isinstance(annotation, type):
            if issubclass(annotation, enum.Enum):
                return next(iter(annotation))
            if issubclass(annotation, nn.Module):
                return self.submodule(name, annotation)
            return self.config(name, annotation)
        return self.by_name(name)

    def runnable(self, options: list[Any]) -> bool:
        """Whether some option is not a module class, or a module class that can run
        (itself, or a subclass in the block file or its package)."""
        return any(
            not (isinstance(o, type) and issubclass(o, nn.Module))
            or o is nn.Module  # any module: a placeholder stands in
            or bool(concrete_modules(o, self.module))
            for o in options
        )

    def item(self, name: str, annotation: Any, index: int) -> object:
        """Item ``index`` of a synthesized sequence: strings are distinct keys ("a", "b")."""
        if not _KEY_NAMES.search(name.lower()):
            return self.value(name, annotation)
        if annotation is str or (
            typing.get_origin(annotation) is typing.Union
            and str in typing.get_args(annotation)
            and not any(
                isinstance(a, type) and issubclass(a, enum.Enum)
                for a in typing.get_args(annotation)
            )
        ):
            return "ab"[index % 2]
        return self.value(name, annotation)

    def by_name(self, name: str) -> object:
        low = name.lower()
        if re.search(r"^(\w+_)?(types|keys|names)$", low) and not low.startswith(_COUNTS):
            return ["a", "b"]  # not ``num_numerical_types``: a count of them
        if _CONFIG_NAMES.search(low):
            return self.config(name, None)
        if _LAYER_FACTORY_NAMES.search(low) and not low.startswith(("num", "n_")):
            return self.layer_factory(name)
        if re.search(r"^(use_|with_|has_|is_|no_|return_|enable|apply)|bias$|affine|inplace", low):
            return False
        if re.search(r"drop|eps|prob|momentum|temperature|^p$|alpha|beta|gamma", low):
            return float_for(name)
        if re.search(r"^(\w+_)?nn$", low):
            return self.linear(name)
        if re.search(r"matrix|vector|tensor", low):
            return self.tensor(name)
        found = named_class(self.module, name)
        if found is not None and (issubclass(found, nn.Module) or self.depth < 1):
            built = self.build(found)
            if built is not MISSING:
                return built
        value = int_for(name, self.profile)
        if value is not MISSING:
            return value
        if re.search(r"block|module|net|encoder|decoder|backbone|model|layer|head", low):
            return self.submodule(name, None)
        return self.profile.dim

    def build(self, cls: type) -> object:
        """An instance of ``cls`` with synthesized arguments, one level deeper, or MISSING."""
        if self.depth >= 2 or inspect.isabstract(cls):
            return MISSING
        inner = Synth(self.module, self.profile, self.depth + 1)
        try:
            args, kwargs = inner.fill(cls)
            probe_values.seed_cpu(0)  # the recipe replays the same weights
            built = cls(*args, **kwargs)
        except Exception:
            return MISSING
        self.placeholders.extend(inner.placeholders)
        return remember(built, call(cls, args, kwargs, seed=0))

    def class_for(self, name: str, inner: Any) -> object:
        """A class for a ``type[...]`` argument: the first class of a union, else a factory."""
        options = (
            [a for a in typing.get_args(inner) if isinstance(a, type)]
            if typing.get_origin(inner) is typing.Union or type(inner).__name__ == "UnionType"
            else [inner]
        )
        first = next((o for o in options if isinstance(o, type)), nn.Module)
        if first is nn.Module or not isinstance(first, type):
            found = named_class(self.module, name)
            if found is None and not re.search(r"norm|act|conv|^(\w+_)?(nn|mlp|lin)", name):
                found = self.kind_class(name)
            if found is not None and issubclass(found, nn.Module):
                return found
            return self.layer_factory(name)
        return first

    def kind_class(self, name: str) -> type | None:
        """A module class of the file named like the argument's kind (``block_types``: ``*Block``)
        that can be built with synthesized arguments."""
        if self.module is None:
            return None
        kinds = [w.capitalize() for w in name.split("_") if len(w) > 2 and w not in _KIND_SKIP]
        for value in vars(self.module).values():
            if (
                isinstance(value, type)
                and issubclass(value, nn.Module)
                and value.__module__ == self.module.__name__
                and any(value.__name__.endswith(k) for k in kinds)
                and Synth(self.module, self.profile, self.depth).build(value) is not MISSING
            ):
                return value
        return None

    def submodule(self, name: str, cls: type[nn.Module] | None) -> object:
        if cls in (None, nn.Module) and LINEAR_NAMES.search(name.lower()):
            return self.linear(name)
        if cls in (None, nn.Module):
            found = named_class(self.module, name)
            if found is not None and issubclass(found, nn.Module):
                cls = found
        if cls in (nn.ModuleList, nn.Sequential):  # a container: two placeholder layers
            self.placeholders.append(name)
            parts = [remember(nn.Identity(), call(nn.Identity)) for _ in range(2)]
            if cls is nn.Sequential:
                return remember(nn.Sequential(*parts), call(nn.Sequential, tuple(parts)))
            return remember(nn.ModuleList(parts), call(nn.ModuleList, [parts]))
        if cls is not None and cls is not nn.Module:
            for candidate in concrete_modules(cls, self.module):
                built = self.build(candidate)
                if built is not MISSING:
                    return built
        kind = self.kind_module(name)
        if kind is not None:
            return kind
        self.placeholders.append(name)
        return remember(nn.Identity(), call(nn.Identity))

    def config(
        self, name: str, cls: type | None, reads: set[str] | None = None, tree: Access | None = None
    ) -> object:
        """An instance of config class ``cls`` (else the file's class named like a config)
        built from its defaults and shrunk; the attributes of ``reads`` it lacks set by
        name (as ``tree``, the reads' structure, says), and ``None`` fields the file uses as
        table keys given one (:func:`give_keys`). The changes are recorded as ``__set__``
        after the constructor call."""
        if cls is None:
            cls = find_config_class(self.module)
        if cls is not None and self.depth < 2 and not nothing_to_configure(cls):
            inner = Synth(self.module, self.profile, self.depth + 1)
            try:
                args, kwargs = inner.fill(cls)
                built, kwargs, before = build_small(cls, args, kwargs, self.profile)
                shrink_parts(built, self.profile, self.module)
                scratch = Synth(self.module, self.profile, self.depth + 1)  # data only
                fill_missing(built, reads or set(), scratch.field_in(tree or {}))
                give_keys(built, self.module)
                after = dict(vars(built))
            except Exception:
                pass
            else:
                expression = call(cls, args, kwargs)
                changes = {k: v for k, v in after.items() if k not in before or before[k] != v}
                if changes:
                    expression["__set__"] = {k: encode(v) for k, v in changes.items()}
                return remember(built, expression)
        self.placeholders.append(name)
        return remember(AutoConfig(self.profile), call(AutoConfig, [self.profile]))

    def by_usage(self, cls: Any, name: str) -> object:
        """An unannotated parameter by what the constructor does with it: a config object
        whose attributes it reads, a registry config dict it passes to a ``build`` call."""
        use = parameter_use(cls, name)
        reads = set(use.reads)
        value = self.registry_built(cls, name)
        if value is not MISSING:
            return value
        tree = access_tree(cls, name)
        nested = is_nested(tree) and self.depth < 2
        configish = bool(reads) and _CONFIG_NAMES.search(name.lower()) is not None
        if nested and (not configish or any(kind != "attr" for kind, _ in tree)):
            return self.structure(name, tree)  # ``extra["stage1"]["num_channels"][i]``
        if not nested:
            holder = class_with_attributes(self.module, use)
            if holder is not None:  # ``block.expansion``: a class of the file is passed
                return holder
        if reads and not configish:
            part = self.module_setting(reads, cls)
            if part is not MISSING:  # ``memory.d_model``: a module of the file that has it
                return part
        if len(reads) >= 2 and self.depth < 2 and not nested:
            config = config_class_for(self.module, reads)
            if config is not None:
                return self.config(name, config, reads)
        if not nested and not configish and wanted(use):  # nothing in the file has them
            made = (
                stand_in_class(self, name, use)
                if as_class(use)
                else stand_in_module(self, use, tree)
            )
            if made is not MISSING:
                return made
        factory = None if reads else factory_for(self.module, cls, name)
        layer_word = _LAYER_WORD.search(name.lower())
        if factory is not None and layer_word and not kind_score(layer_word.group(1), factory):
            factory = None  # ``act_layer()``: torch's activation, not any class the call fits
        if factory is not None:  # ``downsample(resolution, dim=dim)``: a class built inside
            return factory
        if not reads and none_accepted(cls, name):  # ``if downsample is not None: ...``
            return None
        if configish:
            config = config_class_for(self.module, reads, share=0.0, named=CONFIG_CLASSES)
            if config is not None and self.depth < 2:  # a base config that has some of them
                return self.config(name, config, reads, tree)
            return self.namespace(sorted(reads), tree)
        return self.value(name, inspect.Parameter.empty)

    def structure(self, name: str, tree: Access) -> object:
        """A value with what the code reads from it (a tree of :func:`access_tree`): string
        keys make a dict, attributes a namespace (recorded as its call), indexes a list of
        two; every leaf a config field by its name."""
        if not tree:
            return self.field(name)
        kinds = {kind for kind, _ in tree}
        if "item" in kinds:
            item = tree[("item", "")]
            return [self.structure(name, item) for _ in range(2)]
        fields = {key: self.structure(key, sub) for (kind, key), sub in tree.items()}
        if kinds == {"attr"}:
            fields = {k: v for k, v in fields.items() if not k.startswith("_")}
            return remember(
                types.SimpleNamespace(**fields), call(types.SimpleNamespace, (), fields)
            )
        return fields

    def module_setting(self, reads: set[str], owner: Any = None) -> object:
        """A module of the file, built with synthesized arguments, that has every attribute
        the code reads from the parameter; MISSING if none builds. Never an ``owner`` (the
        class whose parameter it is): its own instance nests it until the depth bound leaves
        a placeholder at the bottom, which no forward makes real."""
        return module_with_attributes(self, self.module, reads, exclude=owner)

    def with_attributes(self, cls: Any, name: str, *, as_type: bool = False) -> object:
        """A value that has every attribute the constructor of ``cls`` reads from parameter
        ``name``: for a parameter used or annotated (``as_type``) as a class, a class of the
        file that has them, else a stand-in class; for any other a module of the file that
        has them, else a stand-in module. MISSING when nothing is read or no stand-in can
        have them."""
        use = parameter_use(cls, name)
        if not wanted(use):
            return MISSING
        if as_type or as_class(use):
            found = class_with_attributes(self.module, use, as_type=True)
            return found if found is not None else stand_in_class(self, name, use)
        part = self.module_setting(set(use.reads), cls)
        if part is not MISSING:
            return part
        return stand_in_module(self, use, access_tree(cls, name, held=True))

    def namespace(self, reads: list[str], tree: Access | None = None) -> object:
        """A config built from the attributes the code reads, each synthesized by its name
        (``hidden_size`` 64, ``num_attention_heads`` 2, ``layer_norm_eps`` 1e-5) or by
        what is read under it (``tree``: ``config.depths[i]``, a list): for a config class
        the closure does not carry. A real value with named fields, recorded as its
        constructor call, not a placeholder."""
        field = self.field_in(tree or {})
        fields = {attr: field(attr) for attr in reads if not attr.startswith("_")}
        for attr, key in key_fields(self.module).items():  # ``TABLE[config.impl]``: a key
            if attr in reads:
                fields[attr] = key
        return remember(types.SimpleNamespace(**fields), call(types.SimpleNamespace, (), fields))

    def field_in(self, tree: Access) -> Callable[[str], object]:
        """:meth:`field`, or :meth:`structure` for an attribute read further (``[i]``)."""
        return lambda attr: self.structure(attr, tree.get(("attr", attr)) or {})

    def field(self, name: str) -> object:
        """A config field: plain data (an activation by its name, ``"relu"``, not a class;
        switches such as ``add_cross_attention``/``output_attentions`` off; a chunk size
        0, no chunking; a number where the name alone would give a layer: ``fusion_layer``
        is the index where fusion starts)."""
        low = name.lower()
        if _FLOAT_FIELDS.search(low):
            return float_for(name)
        if re.search(r"(^|_)(act|activation)(_fn|_func|_function)?$", low):
            return self.string_for("act")
        if _SWITCH_FIELDS.search(low):
            return False
        if re.search(r"(^|_)chunks?(_|$)", low):
            return 0
        placeholders = len(self.placeholders)
        value = self.by_name(name)
        if isinstance(value, (type, nn.Module)):  # ``fusion_layer``: a config holds no layers
            del self.placeholders[placeholders:]
            number = int_for(name, self.profile)
            return self.profile.dim if number is MISSING else number
        return value

    def container(self, name: str, kind: type) -> object:
        """A value for a bare ``tuple`` or ``list`` annotation: two items by the name
        (``scale: tuple``: two sizes); for a bare mapping one an empty mapping (nothing says
        its keys), an instance of a ``dict`` subclass from its defaults (a config dict)."""
        if kind in (tuple, list):
            return kind(self.item(name, int, i) for i in range(2))
        if kind in (dict, Mapping) or inspect.isabstract(kind):
            return {}
        try:
            return remember(kind(), call(kind))
        except Exception:
            return {}

    def parameter(self, cls: Any, name: str, annotation: Any) -> object:
        """A value for parameter ``name`` of ``cls`` given outside :meth:`fill` (by a repair:
        a defaulted ``None`` the constructor asserts or names): a registry config dict when
        the constructor hands it to a registry ``build`` call and it may be a dict, else
        :meth:`value`."""
        if annotation is inspect.Parameter.empty or is_mapping_type(annotation):
            built = self.registry_built(cls, name)
            if built is not MISSING:
                return built
        return self.as_mapping(cls, name, annotation, self.value(name, annotation))

    def deeper(self) -> Synth:
        """A synthesizer one level deeper (for the parts of a value)."""
        return Synth(self.module, self.profile, self.depth + 1)

    def is_placeholder(self, value: object) -> bool:
        return isinstance(value, AutoConfig)

    def registry_built(self, cls: Any, name: str) -> object:
        """A registry config dict for parameter ``name`` of ``cls`` when the constructor hands
        it to a registry ``build`` call (itself or after hand-overs) and the block file
        carries registries, else MISSING."""
        builds = parameter_usage(cls, name)[1]
        if not builds or not Carried.tables:
            return MISSING
        return self.registry_dict(name, builds, cls)

    def registry_dict(self, name: str, builds: list[str], owner: Any = None) -> object:
        """A config dict of the registry the parameter is built from (:func:`named_tables`):
        the default the file gives a parameter of this name (``act_cfg=dict(type='GELU')``),
        else ``{"type": ..., **required}`` of the first class of :func:`ranked_classes` (of
        the parameter's kind, smallest first, not ``owner``'s kin) that builds with
        synthesized arguments. A class of another parameter's kind (a ``backbone`` given
        the file's one registered class, the ``data_preprocessor``'s kind) only stands in:
        ``name`` is then a placeholder, so a forward that runs on it is not the block's."""
        tables = named_tables(name, builds)
        defaults = default_dicts(self.module, name, tables)
        if defaults:
            return defaults[0]
        for key, option in ranked_classes(name, tables, owner)[:8]:
            inner = Synth(self.module, self.profile, self.depth + 1)
            try:
                args, kwargs = inner.fill(option)
                if args:
                    continue
                option(**kwargs)
            except Exception:
                continue
            self.placeholders.extend(inner.placeholders)
            if of_another_kind(name, option, owner):
                self.placeholders.append(name)
            return {Carried.key: key, **kwargs}
        return MISSING

    def fill(self, cls: Any) -> tuple[tuple[object, ...], dict[str, object]]:
        """Positional and keyword arguments for every required parameter of ``cls``."""
        sig, owner = init_signature(cls)
        if sig is None:
            return (), {}
        hints = type_hints(sig, owner)
        choices: dict[str, object] | None = None
        args: list[object] = []
        kwargs: dict[str, object] = {}
        for name, param in sig.parameters.items():
            if param.kind == param.VAR_POSITIONAL and not kwargs and _SHAPE_NAMES.match(name):
                args.append(-1)  # ``Reshape(*shape)``: one dimension that takes everything
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            if param.default is not param.empty:
                continue
            annotation = hints.get(name, param.annotation)
            if "Callable" in repr(annotation) and kept_for_later(cls, name):
                self.applied.add(name)
            if annotation in (str, int, inspect.Parameter.empty, str | None):
                choices = value_choices(cls) if choices is None else choices
            if choices and name in choices and (annotation is not int or is_int(choices[name])):
                value: object = choices[name]
            elif annotation is inspect.Parameter.empty:
                value = self.by_usage(cls, name)
            elif is_mapping_type(annotation) and (
                (built := self.registry_built(cls, name)) is not MISSING
            ):  # ``backbone: ConfigType`` handed to ``MODELS.build``: a ``dict(type=...)``
                value = built
            elif annotation in (nn.Module, nn.Module | None) and (
                (part := self.module_setting(parameter_usage(cls, name)[0], cls)) is not MISSING
            ):
                value = part
            elif annotation in (nn.Module, nn.Module | None) and (
                {"children", "named_children"} & parameter_usage(cls, name)[0]
            ):  # a model whose children the constructor walks: a sequence of real layers
                value = self.layers(name)
            elif (annotation in (nn.Module, nn.Module | None) or class_annotation(annotation)) and (
                made := self.with_attributes(
                    cls, name, as_type=class_annotation(annotation) == "class"
                )
            ) is not MISSING:
                value = made  # ``trunk.channel_list``, ``block_types.expansion``
            elif is_config_type(annotation):  # ``config: BertConfig``: plus what is read
                value = self.config(
                    name, annotation, parameter_usage(cls, name)[0], access_tree(cls, name)
                )
            else:
                value = self.value(name, annotation)
            value = self.as_mapping(cls, name, annotation, value)
            if (
                type(value) is nn.Identity
                and name in self.placeholders
                and (keys := output_keys(cls, name))  # ``self.backbone(x)["out"]``
            ):
                self.placeholders.remove(name)
                value = keyed(keys)
            if param.kind == param.POSITIONAL_ONLY:
                args.append(value)
            else:
                kwargs[name] = value
        return tuple(args), {**kwargs, **stage_lengths(sig, kwargs), **spread_bounds(kwargs)}


class AutoConfig:
    """A stand-in config whose attributes are synthesized by name (a placeholder)."""

    def __init__(self, profile: Profile) -> None:
        self._profile = profile

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        return Synth(None, self._profile).by_name(name)

    def __repr__(self) -> str:
        return "AutoConfig()"


_SHAPE_NAMES = re.compile(r"^(shape|sizes?|dims)$")
"""A constructor's ``*shape``: the sizes of a view."""
