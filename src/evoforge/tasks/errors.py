"""The one error type of the tasks package: a bad task name, manifest or directory."""
from __future__ import annotations


class TaskError(ValueError):
    """A task cannot be loaded. The message is one line, fit to print as ``error: ...``."""
