"""Child side: run the program (entry mode) or the evaluator on it, send back one result.

Runs inside the forked, confined child. It writes exactly one header frame (JSON: status,
error) and, on success, one value frame (JSON text, NaN/Infinity allowed) to the result
pipe, then leaves with os._exit so nothing the program registered (atexit, threads) runs.
"""
from __future__ import annotations

import io
import json
import os
import sys
import traceback
import types
from typing import Any, NoReturn

from evoforge.sandbox.protocol import ARTIFACTS_KEY, send_frame

_HERE = __file__
_MEMORY_HEADER = b'{"status": "memory", "error": "MemoryError: out of memory (address-space limit hit)"}'


class ReturnValueError(Exception):
    """The entry's return value cannot be sent back as JSON."""


def _default(obj: Any) -> Any:
    # Called by json for anything it does not know; numpy is optional in the child.
    tolist = getattr(obj, "tolist", None)
    if type(obj).__module__ == "numpy" and tolist is not None:
        return tolist()  # complex entries come back here and fail below
    kind = type(obj).__name__
    if isinstance(obj, (types.GeneratorType, map, filter, zip, range)) or hasattr(obj, "__next__"):
        raise ReturnValueError(f"{kind} is a lazy iterator; return a list instead")
    raise ReturnValueError(f"a value of type {kind} cannot be sent back (use numbers, strings, lists, tuples, dicts, numpy arrays)")


def encode_value(value: Any, limit: int) -> bytes:
    """JSON-encode the return value: numpy arrays -> nested lists, numpy scalars -> numbers, NaN/inf kept."""
    try:
        data = json.dumps(value, default=_default, allow_nan=True, separators=(",", ":")).encode()
    except ReturnValueError as exc:
        raise ReturnValueError(f"return value not serialisable: {exc}") from None
    except (TypeError, ValueError, RecursionError, OverflowError) as exc:
        raise ReturnValueError(f"return value not serialisable: {type(exc).__name__}: {exc}") from None
    if len(data) > limit:
        raise ReturnValueError(f"return value too large ({len(data)} bytes encoded, limit {limit})")
    return data


def error_line(exc: BaseException, program_path: str) -> str:
    """'Type: message (line N)' with N the deepest line of the program (or of any file) in the traceback."""
    raw = exc.msg if isinstance(exc, SyntaxError) and exc.msg else str(exc)
    msg = raw.strip().splitlines()[0] if raw.strip() else ""
    text = f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    if len(text) > 300:
        text = text[:297] + "..."
    where = ""
    if isinstance(exc, SyntaxError) and exc.lineno:
        where = f" (line {exc.lineno})"
    else:
        for frame, lineno in traceback.walk_tb(exc.__traceback__):
            name = frame.f_code.co_filename
            if name == program_path:
                where = f" (line {lineno})"
            elif name != _HERE and not where.startswith(" (line"):
                where = f" ({os.path.basename(name)}, line {lineno})"
    return text + where


def _print_traceback(exc: BaseException) -> None:
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == _HERE:
        tb = tb.tb_next
    try:
        traceback.print_exception(type(exc), exc, tb, file=sys.stderr)
    except Exception:
        pass


_STDIO: list[tuple[str, Any]] = []  # built once in the zygote by prepare_stdio, never written there


def prepare_stdio() -> None:
    """Build the children's std streams ahead (they only name fds 0-2, which each child re-points)."""
    _STDIO.clear()
    for fd, name in ((1, "stdout"), (2, "stderr")):
        raw = io.FileIO(fd, "w", closefd=False)
        stream = io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors="backslashreplace", line_buffering=True)
        _STDIO.append((name, stream))
    _STDIO.append(("stdin", io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8")))


def _fresh_stdio() -> None:
    # The zygote's own sys.stdout may hold buffered bytes; the child writes to its pipes afresh.
    if not _STDIO:
        prepare_stdio()
    for name, stream in _STDIO:
        setattr(sys, name, stream)
        if name != "stdin":
            setattr(sys, f"__{name}__", stream)


def _load_program(code_obj: types.CodeType, path: str) -> types.ModuleType:
    module = types.ModuleType("program")
    module.__file__ = path
    sys.modules["program"] = module
    exec(code_obj, module.__dict__)
    return module


def program_file(req: dict[str, Any]) -> str:
    """program.py, or program<suffix> for another language (issue 10); a strange suffix is refused."""
    suffix = str(req.get("program_suffix") or ".py")
    ok = suffix.startswith(".") and 1 < len(suffix) <= 12 and suffix[1:].replace("_", "").isalnum()
    return "program" + (suffix if ok else ".py")


_ARTIFACT_CAP, _ARTIFACTS_CAP = 16 << 10, 64 << 10


def _cascade(evaluator: types.ModuleType, program_path: str, thresholds: list[float], cascade: bool = True) -> Any:
    """OpenEvolve's cascade (openevolve/evaluator.py, _cascade_evaluate), same rules.

    cascade off, or no evaluate_stage1: evaluate() alone. Else stage1; below thresholds[0]: stop.
    stage2 (a failure keeps stage 1 with stage2_passed = 0); the merged numbers below
    thresholds[1] (or no second threshold): stop; then stage3 likewise. Merging keeps the
    numeric metrics except 'error'; artifacts are merged too.
    """
    stage1 = getattr(evaluator, "evaluate_stage1", None)
    if (not cascade or stage1 is None) and hasattr(evaluator, "evaluate"):
        return _result(evaluator.evaluate(program_path))
    first = _result(stage1(program_path))  # type: ignore[misc]
    if not isinstance(first, dict) or not _passes(first, thresholds, 0) or not hasattr(evaluator, "evaluate_stage2"):
        return first
    merged = first
    for n in (2, 3):
        try:
            nxt = _result(getattr(evaluator, f"evaluate_stage{n}")(program_path))
        except Exception as exc:  # OpenEvolve keeps the earlier stages' numbers
            _print_traceback(exc)
            merged[f"stage{n}_passed"] = 0.0
            merged.setdefault(ARTIFACTS_KEY, {}).update({f"stage{n}_stderr": str(exc), "failure_stage": f"stage{n}"})
            return merged
        if not isinstance(nxt, dict):
            return nxt
        arts = {**merged.get(ARTIFACTS_KEY, {}), **nxt.get(ARTIFACTS_KEY, {})}
        merged = {k: float(v) for d in (merged, nxt) for k, v in d.items()
                  if isinstance(v, (int, float)) and k != "error"}
        if arts:
            merged[ARTIFACTS_KEY] = arts
        if n == 3 or len(thresholds) < 2 or not _passes(merged, thresholds, 1) or not hasattr(evaluator, "evaluate_stage3"):
            return merged
    return merged


def _result(result: Any) -> Any:
    """A dict of metrics; OpenEvolve's EvaluationResult(metrics, artifacts) too, artifacts under ARTIFACTS_KEY."""
    if isinstance(result, types.CoroutineType):  # an `async def evaluate` (OpenEvolve's R example)
        import asyncio

        result = asyncio.run(result)
    metrics = getattr(result, "metrics", None)
    if not isinstance(metrics, dict):
        return result
    out = dict(metrics)
    artifacts = getattr(result, "artifacts", None)
    if isinstance(artifacts, dict) and artifacts:
        out[ARTIFACTS_KEY] = _bounded_artifacts(artifacts)
    return out


def _bounded_artifacts(artifacts: dict[Any, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    total = 0
    for key, value in artifacts.items():
        if isinstance(value, (bytes, bytearray)):
            text = bytes(value[:_ARTIFACT_CAP]).decode("utf-8", "replace")
        else:
            text = value if isinstance(value, str) else repr(value)
        if len(text) > _ARTIFACT_CAP:
            text = text[:_ARTIFACT_CAP] + "\n... (truncated)"
        if total + len(text) > _ARTIFACTS_CAP:
            out["__truncated__"] = f"{len(artifacts) - len(out)} more artifact(s) left out (over {_ARTIFACTS_CAP} bytes)"
            break
        total += len(text)
        out[str(key)] = text
    return out


def _passes(metrics: dict[str, Any], thresholds: list[float], i: int) -> bool:
    """OpenEvolve's _passes_threshold: combined_score, else the mean of numbers except 'error'."""
    if i >= len(thresholds):
        return True
    score = metrics.get("combined_score")
    if not isinstance(score, (int, float)):
        nums = [float(v) for k, v in metrics.items() if k != "error" and isinstance(v, (int, float))]
        if not nums:
            return False
        score = sum(nums) / len(nums)
    return float(score) >= thresholds[i]


def _scratch_copy(ev_path: str, workdir: str) -> str | None:
    """A writable copy of the evaluator's folder inside the child's own directory (issue 10); None: not made."""
    import shutil

    src = os.path.dirname(ev_path)
    dst = os.path.join(workdir, os.path.basename(src) or "task")
    try:
        shutil.copytree(src, dst, symlinks=True, copy_function=shutil.copy,  # mode kept (scripts), no times
                        ignore=shutil.ignore_patterns("__pycache__", ".git"))
    except (OSError, shutil.Error) as exc:  # unreadable files: the evaluator still runs, in place
        print(f"evoforge: could not copy the evaluator folder {src} ({exc}); it stays read-only", file=sys.stderr)
        return None
    return os.path.join(dst, os.path.basename(ev_path))


_SHIM = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "compat", "openevolve_shim")


def run_child(req: dict[str, Any], workdir: str, res_fd: int) -> NoReturn:
    """Never returns. `req` is the request as sent by the host (plain JSON fields)."""
    # bound now: the program may monkey-patch os/json, but cannot reach these locals
    exit_ = os._exit
    getpid = os.getpid
    dumps = json.dumps
    me = getpid()
    program_path = os.path.join(workdir, program_file(req))
    header: dict[str, Any]
    value_bytes = b""

    def finish(head: dict[str, Any] | bytes, payload: bytes = b"") -> NoReturn:
        if getpid() != me:  # a process the program forked got here: it must not answer
            exit_(0)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        try:
            send_frame(res_fd, head if isinstance(head, bytes) else dumps(head).encode())
            if payload:
                send_frame(res_fd, payload)
        except BaseException:
            exit_(3)
        exit_(0)

    try:
        _fresh_stdio()
        sys.argv = [program_path]
        code = req["code"]
        # issue 16: a C++ (or other non-Python) program is data for its evaluator, which compiles it
        python = (req.get("language", "python") == "python" and program_path.endswith(".py")) or not req.get("evaluator_path")
        try:
            code_obj = compile(code if python else "", program_path, "exec")
        except (SyntaxError, ValueError) as exc:  # ValueError: null bytes in source
            finish({"status": "syntax", "error": error_line(exc, program_path)})
        if req.get("evaluator_path"):
            # The zygote read the evaluator's source for us: the dropped uid may not be able to.
            ev_path = os.path.abspath(req["evaluator_path"])
            copy = _scratch_copy(ev_path, workdir) if req.get("scratch") else None
            if copy is not None:
                ev_path = copy
                os.chdir(os.path.dirname(ev_path))  # relative paths of the evaluator resolve in its copy
            sys.path.insert(0, os.path.dirname(ev_path))
            sys.path.append(_SHIM)  # `import openevolve` finds the shim only when OpenEvolve is not installed
            evaluator = types.ModuleType("evaluator")
            evaluator.__file__ = ev_path
            sys.modules["evaluator"] = evaluator
            exec(compile(req["evaluator_source"], ev_path, "exec"), evaluator.__dict__)
            value = _cascade(evaluator, program_path, list(req.get("cascade_thresholds") or ()),
                             bool(req.get("cascade", True)))
        else:
            module = _load_program(code_obj, program_path)
            entry = getattr(module, req.get("entry") or "solve", None)
            if not callable(entry):
                finish({"status": "crash", "error": f"program defines no function {req.get('entry') or 'solve'!r}"})
            value = entry()
        if getpid() != me:
            exit_(0)
        value_bytes = encode_value(value, int(req["max_result_bytes"]))
        del value
        header = {"status": "ok", "error": ""}
    except MemoryError as exc:
        try:
            text = error_line(exc, program_path)
            del exc
            finish({"status": "memory", "error": f"{text} [memory limit {req.get('memory_mb')} MB]"})
        except MemoryError:
            finish(_MEMORY_HEADER)
    except ReturnValueError as exc:
        header = {"status": "crash", "error": str(exc)}
    except SystemExit as exc:
        header = {"status": "crash", "error": f"program called sys.exit({exc.code!r}) before returning a result"}
    except BaseException as exc:
        _print_traceback(exc)
        header = {"status": "crash", "error": error_line(exc, program_path)}
    finish(header, value_bytes)
