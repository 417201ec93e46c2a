"""Typed, validated selector options and the errors a user can see.

Options arrive from the user's config as a plain dict; each selector declares a pydantic
model (extra keys forbidden) and ``parse_options`` turns any problem into one line.
"""
from __future__ import annotations

import math
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from evoforge.database.base import Program


class SelectorConfigError(ValueError):
    """Bad selector options (unknown key, wrong type, out of range)."""


class SelectorStateError(ValueError):
    """A saved selector state that cannot be restored (other selector, missing programs)."""


class SelectorOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


M = TypeVar("M", bound=SelectorOptions)


def parse_options(model: type[M], selector: str, options: dict[str, Any]) -> M:
    try:
        return model(**options)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        text = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            known = ", ".join(sorted(model.model_fields))
            msg = f"unknown option {where!r} (known: {known})"
        elif where:
            msg = f"option {where!r}: {text}"
        else:
            msg = text
        raise SelectorConfigError(f"selector {selector!r}: {msg}") from None


def check_target(target: float | None) -> float | None:
    if target is None:
        return None
    try:
        value = float(target)
    except (TypeError, ValueError):
        raise SelectorConfigError(f"selector target must be a number or None, got {target!r}") from None
    if not math.isfinite(value):
        raise SelectorConfigError(f"selector target must be finite, got {target!r}")
    return value


def check_program(program: Program) -> None:
    """Selectors only ever rank by fitness: refuse a program they could not order."""
    if not isinstance(program, Program):
        raise TypeError(f"expected a Program, got {type(program).__name__}")
    if not isinstance(program.fitness, (int, float)) or not math.isfinite(program.fitness):
        raise ValueError(f"program {program.id} has a non-finite fitness {program.fitness!r}")


def check_state(state: dict[str, Any], name: str, version: int) -> None:
    if not isinstance(state, dict) or state.get("selector") != name:
        got = state.get("selector") if isinstance(state, dict) else type(state).__name__
        raise SelectorStateError(f"saved state is for selector {got!r}, not {name!r}")
    if state.get("version") != version:
        raise SelectorStateError(
            f"saved {name!r} state has version {state.get('version')!r}, expected {version}"
        )


def lookup(programs: dict[int, Program], pid: int, name: str) -> Program:
    try:
        return programs[int(pid)]
    except KeyError:
        raise SelectorStateError(f"saved {name!r} state refers to program {pid}, not in the store") from None
