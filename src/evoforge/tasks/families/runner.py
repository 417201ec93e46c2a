"""Compile and run a program under contest limits, from *inside* the sandbox child.

The sandbox child (evoforge.sandbox) is already confined: no network, writes only to its own
work directory (Landlock), its own uid, rlimits, and every process it leaves is killed
afterwards. Inside it, an evaluator uses this module to compile the candidate (g++) and to run
it once per test case with the contest's own, tighter limits: wall time, address space,
output size, and its own process group (killed after each case, so a forked straggler cannot
outlive its case). Only the standard library is used.
"""
from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

# How a case ends; all but "ok" score 0 for that case (ALE-Bench's rule).
OK, COMPILE, CRASH, TIMEOUT, MEMORY, OUTPUT = "ok", "compile_error", "runtime_error", "time_limit", "memory_limit", "output_limit"
MESSAGE_BYTES = 2000  # tail of stderr kept per case, for the model's feedback
CXX_FLAGS = ("-std=gnu++17", "-O2", "-pipe")


@dataclass
class CaseRun:
    status: str
    stdout: str = ""
    message: str = ""  # compiler/tester message (stderr tail, signal, limit)
    wall: float = 0.0
    max_rss_mb: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)


def _limits(memory_mb: int, cpu_s: float, output_mb: int):
    def apply() -> None:  # runs in the forked process before exec: plain syscalls only
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
        cpu = max(1, int(cpu_s + 0.999))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (output_mb << 20, output_mb << 20))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def protect_evaluator() -> bool:
    """Make this (evaluator) process non-dumpable: a program it runs has the same uid and, without
    Yama, could otherwise ptrace it or write its memory through /proc and forge a case's result."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        return False


def run_limited(argv: list[str], stdin_text: str, *, time_s: float, memory_mb: int, workdir: str,
                output_mb: int = 16, tag: str = "case", message_head: bool = False) -> CaseRun:
    """Run argv with stdin_text; stdout/stderr go to files in workdir (bounded by RLIMIT_FSIZE)."""
    paths = {k: os.path.join(workdir, f"{tag}.{k}") for k in ("in", "out", "err")}
    with open(paths["in"], "w") as f:
        f.write(stdin_text)
    t0 = time.monotonic()
    with open(paths["in"], "rb") as fin, open(paths["out"], "wb") as fout, open(paths["err"], "wb") as ferr:
        try:
            proc = subprocess.Popen(argv, stdin=fin, stdout=fout, stderr=ferr, cwd=workdir, close_fds=True,
                                    start_new_session=True, preexec_fn=_limits(memory_mb, time_s, output_mb))
        except OSError as exc:
            return CaseRun(CRASH, message=f"cannot start {argv[0]}: {exc}")
    deadline = t0 + time_s
    rusage = None
    status = None
    timed_out = False
    while True:  # own wait loop: wait4 gives this process's peak memory, Popen.wait would not
        pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            timed_out = True
            _kill_group(proc.pid)
            _, status, rusage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.002)
    proc.returncode = 0  # reaped above; keeps Popen from waiting again
    wall = time.monotonic() - t0
    _kill_group(proc.pid)  # whatever the program forked into its group dies with its case
    rss = rusage.ru_maxrss / 1024 if rusage else 0.0
    out = _read(paths["out"], 64 << 20)
    err = _read(paths["err"], 1 << 20)
    err = err[: 4 * MESSAGE_BYTES] if message_head else err[-MESSAGE_BYTES:]  # a compiler's first errors matter
    for p in paths.values():
        try:
            os.unlink(p)
        except OSError:
            pass
    if timed_out:
        return CaseRun(TIMEOUT, out, f"time limit exceeded ({time_s:g} s wall clock)\n{err}".strip(), wall, rss)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        if sig in (signal.SIGXCPU, signal.SIGKILL) and wall >= 0.9 * time_s:
            return CaseRun(TIMEOUT, out, f"CPU time limit exceeded ({time_s:g} s)\n{err}".strip(), wall, rss)
        if sig == signal.SIGXFSZ:
            return CaseRun(OUTPUT, "", f"output limit exceeded ({output_mb} MB)", wall, rss)
        if _looks_like_oom(err):
            return CaseRun(MEMORY, out, f"memory limit exceeded ({memory_mb} MB address space)\n{err}".strip(), wall, rss)
        return CaseRun(CRASH, out, f"killed by {name}\n{err}".strip(), wall, rss)
    code = os.WEXITSTATUS(status)
    if code != 0:
        kind = MEMORY if _looks_like_oom(err) else CRASH
        return CaseRun(kind, out, f"exit status {code}\n{err}".strip(), wall, rss)
    return CaseRun(OK, out, err, wall, rss)


def _looks_like_oom(err: str) -> bool:
    return any(s in err for s in ("std::bad_alloc", "MemoryError", "Cannot allocate memory", "out of memory"))


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def _read(path: str, cap: int) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(cap).decode("utf-8", "replace")
    except OSError:
        return ""


def compile_cpp(source_path: str, workdir: str, *, time_s: float = 30.0, memory_mb: int = 2048) -> tuple[str | None, CaseRun]:
    """g++ the program (it may be named program.py: -x c++ says what it is). Returns (binary or None, run)."""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        return None, CaseRun(COMPILE, message="no C++ compiler (g++) on this machine")
    binary = os.path.join(workdir, "program.bin")
    run = run_limited([cxx, *CXX_FLAGS, "-x", "c++", source_path, "-o", binary], "", time_s=time_s,
                      memory_mb=memory_mb, workdir=workdir, output_mb=8, tag="compile", message_head=True)
    if run.status != OK or not os.path.exists(binary):
        why = run.message if run.status in (OK, CRASH) else f"{run.status}: {run.message}"
        why = why.replace(os.path.dirname(os.path.abspath(source_path)) + os.sep, "")  # "program.cpp:12:3: error ..."
        return None, CaseRun(COMPILE, message=_trim_compiler(why), wall=run.wall)
    return binary, run


def _trim_compiler(text: str) -> str:
    """The first errors are the useful ones: keep the head, not the tail, of the compiler's output."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("exit status")]
    errors = [ln for ln in lines if "error" in ln] or lines
    return "\n".join(errors[:12])[:MESSAGE_BYTES]


def command_for(language: str, program_path: str, workdir: str, compile_limit_s: float) -> tuple[list[str] | None, CaseRun | None]:
    """argv that runs the program on stdin, or (None, the compile failure)."""
    if language == "cpp":
        binary, run = compile_cpp(program_path, workdir, time_s=compile_limit_s)
        return ([binary], None) if binary else (None, run)
    if language == "python":
        return [sys.executable, "-I", program_path], None
    return None, CaseRun(COMPILE, message=f"unsupported language {language!r}")
