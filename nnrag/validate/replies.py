"""A block's reply: its messages, the system calls refused to it and its exit status, as one."""

from __future__ import annotations

import os
import signal

from nnrag.validate.frames import BlockReply, MalformedMessage, Message
from nnrag.validate.refusals import note


def _refusals(refused: list[str], shown: int = 3) -> str:
    """``refused: A; B; C (and 5 more)``: the first distinct operations the block tried."""
    distinct = list(dict.fromkeys(str(what) for what in refused))
    more = f" (and {len(distinct) - shown} more)" if len(distinct) > shown else ""
    return "refused: " + "; ".join(distinct[:shown]) + more


def summarize(
    messages: list[Message], *, status: int | None, timed_out: bool, stderr: str = ""
) -> BlockReply:
    """Turn the child's messages and exit status into one reply.

    A result frame that is not a well-formed reply (the block's code can write to the pipe)
    is a ``crash`` naming what was wrong with it.
    """
    try:
        return BlockReply.from_plain(_summary(messages, status, timed_out, stderr))
    except MalformedMessage as error:
        return BlockReply.failure("crash", f"the block sent a malformed result: {error}")
    except (KeyError, TypeError, AttributeError) as error:  # a message missing a field
        what = f"{type(error).__name__}: {error}"
        return BlockReply.failure("crash", f"the block sent a malformed message ({what})")


def _summary(messages: list[Message], status: int | None, timed_out: bool, stderr: str) -> Message:
    """The reply's fields, the refusal policy applied (:mod:`nnrag.validate.refusals`)."""
    refused = [m for m in messages if m.get("kind") == "refused"]
    if any(not m.get("probe") for m in refused):  # an attack: a violation, whatever follows
        reached = [m["stage"] for m in messages if m.get("kind") == "stage"]
        running = [m["stage"] for m in messages if m.get("kind") == "running"]
        return {
            "stage_reached": reached[-1] if reached else None,
            "failed_stage": running[-1] if running else None,
            "category": "sandbox-violation",
            "message": _refusals([str(m["message"]) for m in refused]),
        }
    result = _verdict(messages, status, timed_out, stderr)
    probes = [str(m["message"]) for m in refused] + _strings(result.pop("probes", []))
    denied = result.pop("denied", False)
    if not isinstance(denied, bool):
        raise MalformedMessage(f"reply: denied is {type(denied).__name__}, expected bool")
    if not probes:
        return result
    if denied and result.get("category") is not None:  # the block failed on the refusal
        first = str(result.get("message") or "").strip().splitlines()
        cause = f"; the block failed on it: {first[0]}" if first else ""
        return {**result, "category": "sandbox-violation", "message": _refusals(probes) + cause}
    return {**result, "notes": [note(what) for what in dict.fromkeys(probes)]}


def _strings(value: object) -> list[str]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise MalformedMessage("reply: probes must be a list of strings")
    return list(value)


def _verdict(messages: list[Message], status: int | None, timed_out: bool, stderr: str) -> Message:
    """The reply's fields from the block's own messages and its exit status."""
    result: Message = {"stage_reached": None, "timings": {}, "harvest": []}
    budget: float | None = None  # the search's CPU budget while a CPU-time kill is its own
    for message in messages:
        if message.get("kind") == "stage":
            result["stage_reached"] = message["stage"]
            result["timings"][message["stage"]] = message["seconds"]
        elif message.get("kind") == "running":
            result["running"] = message["stage"]
        elif message.get("kind") == "harvest":
            result["harvest"].append(message["record"])
        elif message.get("kind") == "result":
            result.update({k: v for k, v in message.items() if k not in {"kind", "timings"}})
            timings = message.get("timings", {})
            result["timings"].update(timings if isinstance(timings, dict) else {"?": timings})
            result.pop("running", None)
            return result
        elif message.get("kind") == "budget":
            budget = message.get("cpu_s")
        elif message.get("kind") == "fatal":  # an error escaped the probe itself
            text = str(message["message"])
            out_of_memory = text.startswith("MemoryError")  # the child's limit, not a bug
            result.update(category="memory" if out_of_memory else "internal-error", message=text)
    result["failed_stage"] = result.pop("running", None)
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    tail = lines if len(lines) <= 6 else [*lines[:2], "...", *lines[-4:]]
    detail = ("; stderr: " + " | ".join(tail)) if tail else ""
    if timed_out:
        result.update(category="timeout", message="wall-clock timeout; process group killed")
    elif status is not None and os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        category = {"SIGXCPU": "timeout", "SIGKILL": "memory"}.get(name, "crash")
        hint = " (likely out of memory)" if name == "SIGKILL" else ""
        result.update(category=category, message=f"child killed by {name}{hint}{detail}")
        if name == "SIGXCPU" and isinstance(budget, (int, float)):
            result["message"] = (
                f"the constructor/input search used its budget of {budget:g} CPU seconds in "
                "one operation that did not return in time (the CPU-time limit just past the "
                "budget ended the block; raise it with --nnrag-search-budget, nnrag validate "
                f"--search-budget){detail}"
            )
    elif "category" not in result:
        code = os.WEXITSTATUS(status) if status is not None else -1
        result.update(category="crash", message=f"child exited ({code}) with no result{detail}")
    return result


__all__ = ["summarize"]
