"""Sandbox child: the search over constructor candidates and inputs for one block class."""

from __future__ import annotations

import copy
import itertools
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, cast

from torch import nn

from nnrag.validate.probe.args import Synth
from nnrag.validate.probe.asserts import asserted_inputs
from nnrag.validate.probe.branches import other_branch
from nnrag.validate.probe.budget import SearchBudget, SearchInterrupted, stop_interrupting
from nnrag.validate.probe.ctor import Ctor
from nnrag.validate.probe.docshapes import passed_on_inputs
from nnrag.validate.probe.examples import examples
from nnrag.validate.probe.flags import flip_guard
from nnrag.validate.probe.graph import called_class, is_graph_spec
from nnrag.validate.probe.harvest import Harvester
from nnrag.validate.probe.init_asserts import asserted_ctor
from nnrag.validate.probe.inputs import forward_params, input_candidates, optional_inputs
from nnrag.validate.probe.kinds import empty_registries
from nnrag.validate.probe.none_callables import fill_none_callables
from nnrag.validate.probe.outcomes import (
    NON_FINITE,
    OutputError,
    RecipeError,
    classify,
    describe,
    output_digest,
    registry_miss,
    shapes_of,
)
from nnrag.validate.probe.placeholders import failed_in_placeholders
from nnrag.validate.probe.profiles import PROFILES, Profile
from nnrag.validate.probe.registries import Carried
from nnrag.validate.probe.repair import (
    asserted_levels,
    equal_to_named,
    fill_none_layers,
    fill_none_mappings,
    fill_none_read,
    fill_none_sizes,
    fixed_width,
    lengthen,
    listify,
    match_residual,
    name_repairs,
    numbers_as_objects,
    scale_sizes,
    tensorize,
    unset_conflicting,
    unset_first_conflicting,
    viewed_width,
)
from nnrag.validate.probe.repair_names import failing_line
from nnrag.validate.probe.reshape import (
    NAMED_INTEGER,
    NAMED_RANK,
    binary_targets,
    named_integer,
    named_rank,
    positive_inputs,
    repair,
    repair_with_keywords,
    zero_thresholds,
)
from nnrag.validate.probe.samples import sample_inputs
from nnrag.validate.probe.screen import MetaScreen
from nnrag.validate.probe.signatures import init_signature, shallow_defaults
from nnrag.validate.probe.stand_ins import (
    ShapeKeeping,
    batch_norms,
    fill_none_modules,
    fresh_lazy,
    heads_divide_widths,
    many_argument_stand_ins,
    plain_convolutions,
    profile_layers,
    real_stand_ins,
    viewed_linear,
)
from nnrag.validate.probe.state import BuiltState
from nnrag.validate.probe.unpacked import named_items
from nnrag.validate.probe.values import decode, seed_cpu
from nnrag.validate.refusals import DecidedByViolation

if TYPE_CHECKING:
    import pluggy


class Runner(Protocol):
    """What the search needs of the runner (``probe.runner.Runner``): the request, the
    recipe and stage bookkeeping, and the guarded forward/backward calls."""

    request: Mapping[str, Any]
    recipe: dict[str, Any]
    harvest: list[dict[str, Any]]
    violations: list[str]
    source_packages: frozenset[str]
    plugins: pluggy.PluginManager | None
    replay: Mapping[str, Any] | None
    seed: int
    input_seed: int

    def send(self, message: dict[str, Any]) -> None: ...
    def passed(self, stage: str, started: float) -> None: ...
    def finish(
        self,
        failed: str | None = None,
        category: str | None = None,
        message: str = "",
        *,
        error: BaseException | None = None,
    ) -> None: ...
    def refusal(self, *, imports: bool = True) -> tuple[str, str] | None: ...
    def violated(self, stage: str, started: float) -> bool: ...
    def screen_for(self, cls: type, ctor: Ctor, block: nn.Module) -> MetaScreen | None: ...
    def screened_out(
        self,
        screen: MetaScreen,
        harvester: Harvester | None,
        args: list[Any],
        kwargs: dict[str, Any],
    ) -> str | None: ...
    def record_ctor(self, ctor: Ctor) -> None: ...
    def record_built(self, block: nn.Module) -> None: ...
    def forward(self, block: nn.Module, args: list[Any], kwargs: dict[str, Any]) -> Any: ...
    def check_output(self, out: Any, block: nn.Module) -> str: ...
    def backward(self, block: nn.Module, args: list[Any], kwargs: dict[str, Any]) -> None: ...


MAX_ATTEMPTS = 40
NATIVE_OP_TRIES = 3
"""Constructor candidates whose forward may reach an absent compiled operator before the search
ends: inputs cannot avoid the operator, only a candidate whose options take another path can."""
"""Hard bound on constructor plus forward attempts per block."""

Inputs = list[tuple[list[Any], dict[str, Any]]]
"""Input candidates: (positional specs, keyword specs)."""
Candidate = tuple[Ctor, Inputs | None]
"""A constructor call and, when they are known (hints, recipes), the inputs to give it."""
_FATAL = (KeyboardInterrupt, SystemExit, MemoryError)
_ENDS_SEARCH = (SearchInterrupted, DecidedByViolation)
"""Raised where an attempt runs when the search must end there: its budget is used up, or a
violation already decided the verdict."""


def ctor_candidates(request: Mapping[str, Any], module: Any, cls: type) -> Iterator[Candidate]:
    """Constructor candidates, best first: a replayed recipe alone, else the hints alone, else
    the frozen harvest's calls, then the calls of the class's docstring examples, then
    synthesized ones for every size profile (defaulted depths cut to one layer first)."""
    if request.get("replay") is not None:  # exactly the recorded constructor call and inputs
        recipe = request["replay"]
        yield (
            _decoded(recipe, "init_args", "init_kwargs", str(recipe.get("origin") or "none")),
            [(list(recipe.get("inputs") or []), dict(recipe.get("input_kwargs") or {}))],
        )
        return
    hints = request.get("hints")
    if hints:
        given = hints.get("inputs")
        yield (
            _decoded(hints, "init_args", "init_kwargs", "hinted"),
            [(list(given), dict(hints.get("input_kwargs", {})))] if given is not None else None,
        )
        return
    for record in request.get("harvested", ()):
        try:
            ctor = _decoded(record, "init_args", "init_kwargs", "harvested")
        except Exception:
            continue
        yield ctor, [(list(record["inputs"]), dict(record.get("input_kwargs", {})))]
    seen: list[str] = []
    yield from _from_examples(module, cls, seen)
    for profile in PROFILES:
        synth = Synth(module, profile)
        try:
            args, kwargs = synth.fill(cls)
        except Exception:
            continue
        shallow = {**kwargs, **shallow_defaults(cls)}
        for candidate in (shallow, kwargs):
            key = repr((args, candidate))
            if key in seen:
                continue
            seen.append(key)
            yield Ctor("synthesized", args, candidate, synth.placeholders, profile), None


def _from_examples(module: Any, cls: type, seen: list[str]) -> Iterator[Candidate]:
    """The calls of the class's docstring examples, each first with its defaulted depths cut
    to one layer (as synthesized calls: blocks stay small); their inputs are tried first."""
    sig, _ = init_signature(cls)
    positional = [
        p.name
        for p in (sig.parameters.values() if sig else ())
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    for example in examples(cls, module):
        given = {*positional[: len(example.args)], *example.kwargs}
        cut = {k: v for k, v in shallow_defaults(cls).items() if k not in given}
        inputs = [example.inputs] if example.inputs is not None else []
        for kwargs in ({**example.kwargs, **cut}, example.kwargs):
            key = repr((example.args, kwargs))
            if key not in seen:
                seen.append(key)
                yield (
                    Ctor("synthesized", example.args, kwargs, profile=PROFILES[0], inputs=inputs),
                    None,
                )


def _decoded(record: Mapping[str, Any], args: str, kwargs: str, origin: str) -> Ctor:
    return Ctor(
        origin,
        tuple(cast(list[object], decode(record.get(args) or []))),
        {k: decode(v) for k, v in (record.get(kwargs) or {}).items()},
    )


def ctor_repairs(ctor: Ctor, cls: type, error: BaseException) -> list[Ctor]:
    """Other constructor calls suggested by the error ``ctor`` raised."""
    found = (
        asserted_ctor(ctor, cls, error),
        listify(ctor, cls, error),
        tensorize(ctor, cls, error),
        numbers_as_objects(ctor, cls, error),
        fill_none_layers(ctor, cls, error),
        fill_none_mappings(ctor, cls, error),
        fill_none_read(ctor, cls, error),
        fill_none_sizes(ctor, cls),
        scale_sizes(ctor, error),
        unset_conflicting(ctor, cls, error),
        unset_first_conflicting(ctor, cls, error),
        equal_to_named(ctor, error),
        lengthen(ctor, cls, error),
        named_items(ctor, cls, error),
        *name_repairs(ctor, cls, error),
        flip_guard(ctor, cls, error),
        other_branch(ctor, cls, error),
        profile_layers(ctor),
    )
    return [repaired for repaired in found if repaired is not None]


def unsize_stand_ins(block: nn.Module) -> None:
    """Unmake the layers the block's shape-keeping stand-ins made at a forward that failed:
    a later input that runs must size them itself, as the recipe's replay (one forward on a
    fresh block) does; a layer kept from an earlier input (a linear layer over the last
    dimension where a convolution over the channels comes fresh) made the replay differ."""
    for module in list(block.modules()):
        if isinstance(module, ShapeKeeping) and module.layer is not None:
            module.layer = None


def input_repairs(
    message: str, block: nn.Module, args: list[Any], kwargs: dict[str, Any], profile: Profile
) -> list[tuple[list[Any], dict[str, Any]]]:
    """The inputs to try after a forward error, best first: an input the message names (the
    rank it wants, or integer labels); the shape repair (which changes the first input and
    the inputs shaped like it), then, for a new width, the same repair of only the others
    (the first input already passed the layers before: a cross-attention's memory beside its
    queries); else the same repair over the tensors passed by keyword too; else per-sample
    records for an argument forward reads by attribute (and their fields); else the optional
    arguments forward used, given values. Empty: no idea."""
    if NAMED_RANK.search(message):  # ``labels must be a 1D tensor``: that input, not the first
        names = [p.name for p in forward_params(block)]
        renamed = named_rank(message, names, args, kwargs, profile)
        if renamed is not None:
            return [renamed]
    if NAMED_INTEGER.search(message):  # ``Expected argument `target` to be an int ...``
        labelled = named_integer(message, [p.name for p in forward_params(block)], args, kwargs)
        if labelled is not None:
            return [labelled]
    fixed = repair(message, args, profile)
    if fixed is not None:
        found = [(fixed, kwargs)]
        if _width_only(args, fixed):
            found.append(([args[0], *fixed[1:]], kwargs))
        return found
    if is_graph_spec(args):  # graph candidates list their optional arguments themselves
        return []
    keyed = repair_with_keywords(message, args, kwargs, profile)
    if keyed is not None:
        return [keyed]
    records = sample_inputs(message, block, forward_params(block), args, kwargs)
    more = optional_inputs(message, block, args, kwargs, profile)
    if more is None:
        passed = passed_on_inputs(message, block, forward_params(block), kwargs, profile)
        more = None if passed is None else (args, passed)
    return records + ([] if more is None else [more])


def _width_only(args: list[Any], fixed: list[Any]) -> bool:
    """The repair gave the first input and others shaped like it another last dimension."""
    if len(fixed) != len(args) or len(args) < 2 or fixed[1:] == args[1:]:
        return False
    old, new = args[0], fixed[0]
    if not (isinstance(old, dict) and isinstance(new, dict) and "shape" in old and "shape" in new):
        return False
    before, after = list(old["shape"]), list(new["shape"])
    return len(before) == len(after) and before[:-1] == after[:-1] and before[-1] != after[-1]


class Search:
    """Constructor candidates (with their repairs) until one builds, then input candidates
    (with their repairs) until one runs forward; the runner records and reports."""

    def __init__(self, runner: Runner, module: Any, cls: type, depth: str) -> None:
        self.runner = runner
        self.module = module
        self.cls = cls
        self.depth = depth
        self.want_forward = depth in {"forward", "backward"}
        harvest = bool(runner.request.get("harvest")) and self.want_forward
        self.harvester = Harvester(module, cls) if harvest else None
        self.started = time.monotonic()
        self.budget = SearchBudget.of(runner.request)
        """Counted from here: the block's import is not the search."""
        self.out_of_budget = False
        self.forward_started = 0.0
        self.attempts = 0
        self.built_any = False
        self.stopped = False
        self.ctor_error: BaseException | None = None
        self.forward_error: BaseException | None = None
        self.native_errors: list[BaseException] = []  # forward reached an absent operator
        # forward reached a package or an attribute of an installed release that is absent
        # here: no inputs supply it, so it outranks the shape errors of later inputs
        self.absent_error: BaseException | None = None
        self.absent_recipe: dict[str, Any] = {}  # the recipe that gave ``absent_error``
        self.forward_placeholders: list[str] = []  # the last forward error came from inside
        self.output_error: OutputError | None = None
        self.output_recipe: dict[str, Any] = {}  # the recipe that gave ``output_error``
        self.screened_error: RuntimeError | None = None
        self.pending: list[Candidate] = []
        self.widened_seen: set[str] = set()

    def run(self) -> None:
        """The search, each attempt stopped when it outlasts the CPU budget (not in a replay
        or a hinted run: one given call, bounded by the timeout alone)."""
        searching = self.runner.replay is None and not self.runner.request.get("hints")
        try:
            with self.budget.interrupting(enabled=searching, announce=self.runner.send):
                self.search()
        except _ENDS_SEARCH as error:  # raised where no attempt's handler stood
            self.interrupted(error)

    def interrupted(self, error: BaseException) -> None:
        """The budget ran out during an attempt (a timeout), or a violation decided the
        verdict: the search ends on it."""
        self.out_of_budget = isinstance(error, SearchInterrupted)
        if self.built_any:
            self.forward_error = self.forward_error or error
        else:
            self.ctor_error = self.ctor_error or error
        self.fail()

    def search(self) -> None:
        runner = self.runner
        runner.send({"kind": "running", "stage": "instantiate"})
        candidates = ctor_candidates(runner.request, self.module, self.cls)
        while (item := self.next_candidate(candidates)) is not None:
            ctor, given = item
            if self.attempts >= MAX_ATTEMPTS or (self.built_any and self.spent()):
                break
            if runner.violations:  # the verdict is decided: no other call can undo it
                break
            block = self.construct(ctor, given)
            if self.stopped:
                break
            if block is None:
                continue
            if not self.built_any and self.first_build():
                return
            try:
                block.eval()
            except Exception as error:  # the block's own train() takes other arguments
                runner.finish("forward", "runtime-error", f"eval() failed: {describe(error)}")
                return
            outcome, messages = self.try_inputs(block, ctor, given)
            if outcome == "done":
                return
            if outcome == "stop":
                break
            if runner.replay is None:
                self.widen(ctor, given, messages)
        self.fail()

    def spent(self) -> bool:
        """The search's CPU budget is used up (and the search ends on it: ``out_of_budget``)."""
        self.out_of_budget = self.budget.spent()
        return self.out_of_budget

    def next_candidate(self, candidates: Iterator[Candidate]) -> Candidate | None:
        """The next constructor candidate: repairs first, then the generator's."""
        if self.pending:
            return self.pending.pop(0)
        try:
            return next(candidates, None)
        except Exception as error:  # a hinted or recorded value that cannot be rebuilt
            message = f"the recipe's values cannot be rebuilt: {describe(error)}"
            raise RecipeError(message) from error

    def construct(self, ctor: Ctor, given: Inputs | None) -> nn.Module | None:
        """The block built from ``ctor``, or ``None`` (its repairs queued; ``stopped`` when
        the error ends the search)."""
        runner = self.runner
        self.attempts += 1
        runner.record_ctor(ctor)
        seed_cpu(runner.seed)
        try:
            block = self.build(ctor)
        except _ENDS_SEARCH:
            raise
        except _FATAL as error:
            self.ctor_error, self.stopped = error, True
            return None
        except BaseException as error:
            self.ctor_error = error
            if runner.replay is None:
                self.pending.extend((fixed, given) for fixed in ctor_repairs(ctor, self.cls, error))
            return None
        try:
            runner.record_built(block)
        except Exception as error:  # e.g. a subclass that never called Module.__init__
            self.ctor_error = error
            return None
        return block

    def empty_registries(self) -> list[str]:
        """:func:`empty_registries` of the block class; none where reading its sources fails
        (a child near its memory limit after a large build): the verdict stands without it."""
        try:
            return empty_registries(self.cls)
        except Exception:
            return []

    def build(self, ctor: Ctor) -> nn.Module:
        """``cls(*args, **kwargs)``; where a registry lacks a type string, once more in the
        block's package as the default scope (a build from the root registry of a class its
        package registers, as the framework's runner builds it). A replay takes the same
        path, so it builds in the same scope."""
        try:
            return cast(nn.Module, self.cls(*ctor.args, **ctor.kwargs))
        except Exception as error:
            if not (registry_miss(error) and Carried.enter_scope()):
                raise
        seed_cpu(self.runner.seed)
        return cast(nn.Module, self.cls(*ctor.args, **ctor.kwargs))

    def first_build(self) -> bool:
        """The instantiate stage passed; ``True`` when the run is over (a refusal, or the
        requested depth reached)."""
        runner = self.runner
        self.built_any = True
        if runner.violated("instantiate", self.started):
            return True
        if not self.want_forward:
            runner.recipe["attempts"] = self.attempts
            runner.finish()
            return True
        self.forward_started = time.monotonic()
        runner.send({"kind": "running", "stage": "forward"})
        return False

    def try_inputs(
        self, block: nn.Module, ctor: Ctor, given: Inputs | None
    ) -> tuple[str, list[str]]:
        """Run forward on input candidates until one passes: (``"done"`` when reported,
        ``"stop"`` when the search must end, else ``"next"``; the forward messages)."""
        runner = self.runner
        profile = ctor.profile or PROFILES[0]
        found = (
            given
            if given is not None
            else itertools.chain(
                ctor.inputs, input_candidates(block, profile, ctor.kwargs, runner.plugins)
            )
        )
        queue: list[tuple[list[Any], dict[str, Any], bool]] = [(a, k, False) for a, k in found]
        screen = runner.screen_for(self.cls, ctor, block) if given is None else None
        built = BuiltState(block)
        tried: list[str] = []
        messages: list[str] = []
        while queue and self.attempts < MAX_ATTEMPTS and not self.spent():
            args, kwargs, screened = queue.pop(0)
            key = repr((args, kwargs))
            if key in tried:
                continue
            if (
                screen is not None
                and not screened
                and screen.worth(args, kwargs)
                and screen.active
                and self.screened(
                    screen, block, queue, tried=tried, candidate=(args, kwargs), profile=profile
                )
            ):
                continue
            tried.append(key)
            self.attempts += 1
            if built.block is not block:  # built again for fresh lazy layers: as built
                built = BuiltState(block)
            elif type(block) is built.kind and built.changed():  # run on the block as built
                block, ctor = self.rebuilt(block, ctor)
                built = BuiltState(block)
            # the last inputs tried stay in the recipe, so a failure can be reproduced too
            runner.recipe.update(inputs=args, input_kwargs=kwargs)
            try:
                out = runner.forward(block, args, kwargs)
            except _ENDS_SEARCH:
                raise
            except _FATAL as error:
                self.forward_error = error
                return "stop", messages
            except BaseException as error:
                self.forward_error = error
                self.forward_placeholders = failed_in_placeholders(error, block, ctor)
                bare = isinstance(error, AssertionError) and not str(error)
                messages.append(failing_line(error).strip() if bare else str(error))
                category = classify(error, "forward", runner.violations, runner.source_packages)
                if category == "missing-external" and self.absent_error is None:
                    self.absent_error = error
                    self.absent_recipe = copy.deepcopy(runner.recipe)  # later tries change it
                if category == "native-op":
                    # the inputs got through to an operator whose binary is absent: other
                    # inputs meet it too; another constructor candidate may take another path
                    self.native_errors.append(error)
                    done = len(self.native_errors) >= NATIVE_OP_TRIES
                    return ("stop" if done else "next"), messages
                unsize_stand_ins(block)  # the next inputs size them again, as a replay does
                if given is None:
                    block, ctor = self.unsized(block, ctor)
                    message = f"{type(error).__name__}: {error}"
                    if runner.replay is None and plain_convolutions(ctor, self.cls, [message]):
                        return "next", messages  # the constructor, not the inputs (widen)
                    if isinstance(error, AssertionError) and not str(error):  # its line
                        message += failing_line(error).strip()  # ``assert memory is not None``
                    fixes = input_repairs(message, block, args, kwargs, profile)
                    asserted = asserted_inputs(error, block, forward_params(block), args, kwargs)
                    fixes = [asserted, *fixes] if asserted is not None else fixes
                    queue[:0] = [(a, k, False) for a, k in fixes]
                continue
            self.record_output(runner, args, kwargs, out)
            problem = runner.check_output(out, block)
            if problem:
                self.forward_error = self.output_error = OutputError(problem)
                self.output_recipe = copy.deepcopy(runner.recipe)  # later tries change it
                if NON_FINITE in problem and runner.input_seed == runner.seed and given is None:
                    runner.input_seed = runner.seed + 1  # once, with other input values
                    tried.remove(key)
                    queue.insert(0, (args, kwargs, True))
                    # then with 0/1 targets beside the first: integers, then floats
                    for at, dtype in ((1, "int64"), (2, "float32")):
                        binary = binary_targets(args, dtype)
                        if binary is not None:
                            queue.insert(at, (binary, kwargs, True))
                    positive = positive_inputs(args, kwargs)  # then every float positive
                    if positive is not None:
                        queue.insert(3, (*positive, True))
                    zeroed = zero_thresholds(args, kwargs)  # then thresholds at 0
                    if zeroed is not None:
                        queue.insert(4, (*zeroed, True))
                continue
            self.succeed(block, ctor, args, kwargs)
            return "done", messages
        return "next", messages

    def rebuilt(self, block: nn.Module, ctor: Ctor) -> tuple[nn.Module, Ctor]:
        """The block built again as a replay builds it (from the recipe's recorded call when
        that is lossless: argument objects an earlier forward may have changed are built anew
        too), for a forward after an earlier one changed the block; else the same block."""
        recipe = self.runner.recipe
        try:
            again = ctor
            if recipe.get("lossless"):
                decoded = _decoded(recipe, "init_args", "init_kwargs", ctor.origin)
                again = replace(ctor, args=decoded.args, kwargs=decoded.kwargs)
            seed_cpu(self.runner.seed)
            fresh = cast(nn.Module, self.cls(*again.args, **again.kwargs))
            fresh.eval()
        except _FATAL:
            raise
        except Exception:  # it built before: keep the changed block rather than none
            return block, ctor
        return fresh, again

    def unsized(self, block: nn.Module, ctor: Ctor) -> tuple[nn.Module, Ctor]:
        """The block built again with fresh lazy layers when a failed forward sized the ones
        it was given (:func:`fresh_lazy`), else the same block."""
        fresh = fresh_lazy(ctor) if self.runner.replay is None else None
        if fresh is None:
            return block, ctor
        rebuilt = self.construct(fresh, None)
        if rebuilt is None:
            return block, ctor
        try:
            rebuilt.eval()
        except Exception:
            return block, ctor
        return rebuilt, fresh

    def record_output(
        self, runner: Runner, args: list[Any], kwargs: dict[str, Any], out: Any
    ) -> None:
        """Record the inputs that ran and what forward returned into the recipe."""
        runner.recipe.update(
            inputs=args,
            input_kwargs=kwargs,
            output_shapes=[shapes_of(out)],
            output_digest=output_digest(out),
            attempts=self.attempts,
        )

    def screened(
        self,
        screen: MetaScreen,
        block: nn.Module,
        queue: list[tuple[list[Any], dict[str, Any], bool]],
        *,
        tried: list[str],
        candidate: tuple[list[Any], dict[str, Any]],
        profile: Profile,
    ) -> bool:
        """Check a costly candidate on the meta device first; ``True`` when it was rejected
        there (its repair queued first, or itself queued last for a real run)."""
        args, kwargs = candidate
        rejected = self.runner.screened_out(screen, self.harvester, args, kwargs)
        if rejected is None:
            return False
        fixes = input_repairs(rejected, block, args, kwargs, profile)
        if fixes:  # meta's message fixed it: no CPU run for this one
            queue[:0] = [(a, k, False) for a, k in fixes]
            tried.append(repr((args, kwargs)))
            self.screened_error = self.screened_error or RuntimeError(
                f"{rejected} (on the meta device)"
            )
        else:  # run it for real, last: CPU's message may say more
            queue.append((args, kwargs, True))
        return True

    def succeed(
        self, block: nn.Module, ctor: Ctor, args: list[Any], kwargs: dict[str, Any]
    ) -> None:
        """Forward ran: report it (unless refused or built on placeholders), then backward."""
        runner = self.runner
        if self.harvester is not None:
            self.harvester.restore()
            runner.harvest = list(self.harvester.records.values())
        refusal = runner.refusal()
        if refusal is not None:
            runner.finish("forward", *refusal)
            return
        if ctor.placeholders:
            real = self.with_real_layers(ctor, block, args, kwargs)
            if real is None:
                runner.finish(
                    "forward",
                    "ctor-args",
                    f"forward ran only with placeholders for {', '.join(ctor.placeholders)}",
                )
                return
            block = real
        stop_interrupting(runner.send)  # the search is over: the verdict's stages have the timeout
        runner.passed("forward", self.forward_started)
        if self.depth == "backward":
            runner.backward(block, args, kwargs)
        else:
            runner.finish()

    def with_real_layers(
        self, ctor: Ctor, block: nn.Module, args: list[Any], kwargs: dict[str, Any]
    ) -> nn.Module | None:
        """The block built again with real layers in place of its placeholder modules
        (:func:`real_stand_ins`), when forward runs on the same inputs: recorded as the
        recipe; else ``None`` (the placeholder run's recipe kept)."""
        runner = self.runner
        if runner.replay is not None or self.attempts >= MAX_ATTEMPTS:
            return None
        kept = copy.deepcopy(runner.recipe)
        fixed = real_stand_ins(ctor, lambda: runner.forward(block, args, kwargs))
        fixed = fixed or profile_layers(ctor)
        if fixed is None or fixed.placeholders:
            return None
        self.attempts += 1
        runner.record_ctor(fixed)
        seed_cpu(runner.seed)
        try:
            real = cast(nn.Module, self.cls(*fixed.args, **fixed.kwargs))
            runner.record_built(real)
            real.eval()
            out = runner.forward(real, args, kwargs)
            problem = runner.check_output(out, real)
        except (*_FATAL, *_ENDS_SEARCH):
            raise
        except BaseException:
            problem = "failed"
        if problem:
            runner.recipe.clear()
            runner.recipe.update(kept)
            return None
        self.record_output(runner, args, kwargs, out)
        return real

    def widen(self, ctor: Ctor, given: Inputs | None, messages: list[str]) -> None:
        """Queue the constructor call the forward errors point to (a residual's width, a
        class called with other arguments), once each."""
        widened = (
            # placeholders first (a callable left at None, a layer given more than its input):
            # what the other messages say came after them
            fill_none_callables(ctor, self.cls, self.forward_error)
            or many_argument_stand_ins(ctor, messages)
            or match_residual(ctor, messages)
            or fixed_width(ctor, messages)
            or viewed_width(ctor, self.cls, messages)
            or asserted_levels(ctor, self.cls, messages)
            or called_class(ctor, messages)
            or plain_convolutions(ctor, self.cls, messages)
            or batch_norms(ctor, self.cls, messages)
            or heads_divide_widths(ctor, self.cls, messages)
            or viewed_linear(ctor, messages)
            or fill_none_modules(ctor, self.cls, messages)
        )
        if widened is not None and repr(widened.kwargs) not in self.widened_seen:
            self.widened_seen.add(repr(widened.kwargs))
            self.pending.insert(0, (widened, given))

    def fail(self) -> None:
        runner = self.runner
        runner.recipe["attempts"] = self.attempts
        if not self.built_any:
            assert self.ctor_error is not None or self.attempts == 0
            failure: BaseException = self.ctor_error or RuntimeError("no constructor candidate")
            stage = "instantiate"
        else:
            failure = (
                self.output_error
                or (self.native_errors[-1] if self.native_errors else None)
                or self.absent_error
                or self.forward_error
                or self.screened_error
                or RuntimeError("no input candidate within the attempt bound")
            )
            stage = "forward"
            replays: dict[str, Any] = {}
            if failure is self.output_error:
                replays = self.output_recipe
            elif failure is self.absent_error:
                replays = self.absent_recipe
            if replays:  # the inputs that raised it, not the last ones tried
                runner.recipe.clear()
                runner.recipe.update(replays, attempts=self.attempts)
        spent = f"{self.budget.message(self.attempts)}: " if self.out_of_budget else ""
        if failure is self.forward_error and self.forward_placeholders:
            names = ", ".join(self.forward_placeholders)
            message = (
                f"{spent}forward failed inside placeholders for {names} (stand-ins: the block"
                f" file has no class of their kind): {describe(failure, runner.source_packages)}"
            )
            runner.finish(stage, "ctor-args", message, error=failure)
            return
        if isinstance(failure, SearchInterrupted):  # no other error: the one attempt was slow
            runner.finish(stage, "timeout", spent + describe(failure, runner.source_packages))
            return
        category = classify(failure, stage, runner.violations, runner.source_packages)
        message = spent + describe(failure, runner.source_packages)
        if stage == "instantiate" and (empty := self.empty_registries()):
            message += (
                f" (no class to build {', '.join(empty)}: the block file carries none of that"
                " registry's classes, which code outside the closure registers; give the"
                " block a config naming one)"
            )
            if category == "ctor-args":  # no argument the probe writes can name such a class
                category = "dynamic-registry"
        runner.finish(stage, category, message, error=failure)
