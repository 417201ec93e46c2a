"""The engine's one error type (its own module: stages and the loop both raise it)."""


class EngineError(RuntimeError):
    """A run cannot start or go on (e.g. the initial program is invalid); one readable line."""
