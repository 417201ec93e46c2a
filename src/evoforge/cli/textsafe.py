"""Text a program or a model wrote, made safe for a terminal (issue 9).

Escape sequences in program output, error lines or generated code would otherwise reach the
user's terminal raw through `verify` and `show`: they can clear the screen, retitle the window,
move the cursor over earlier lines, or write the clipboard (OSC 52). They are shown as visible
escapes instead; newlines and tabs stay.
"""
from __future__ import annotations

import re

# CSI ... final byte, OSC ... BEL/ST, other ESC sequences, then any other C0/C1 control
_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: object) -> str:
    s = text if isinstance(text, str) else str(text)
    s = s.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates would make print() raise
    s = _SEQUENCE.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), s)
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), s)
