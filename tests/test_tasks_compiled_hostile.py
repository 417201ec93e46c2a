"""Hostile compiled programs in the algorithm-engineering family: compiled and run inside the
confined sandbox child, each case under its own limits. Every failure is a penalty class with
the compiler's / tester's message, and nothing the program does escapes its case."""
from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import time
from pathlib import Path

import pytest

from evoforge.sandbox import SandboxPool
from evoforge.sandbox.base import Status
from evoforge.tasks import get_task
from evoforge.tasks.evaluate import evaluate_program
from evoforge.tasks.families import algo

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ on this machine")

RECT = 'printf("4\\n0 0\\n50000 0\\n50000 50000\\n0 50000\\n");'


def small_task(tmp_path: Path, language: str = "cpp", seeds=(1, 2), case_time: float = 1.0):
    """net-capture with 2 seeds and 1 s per case: the hostile tests stay cheap."""
    stub = tmp_path / f"eval_{language}.py"
    stub.write_text("from evoforge.tasks.families.algo import evaluate_cases\n"
                    f"def evaluate(p):\n    return evaluate_cases(p, {language!r}, {tuple(seeds)!r}, {case_time!r})\n")
    os.chmod(tmp_path, 0o755)
    base = get_task("net-capture-cpp" if language == "cpp" else "net-capture-py")
    return dataclasses.replace(base, evaluator_path=stub, verify=functools.partial(algo.verify, seeds=tuple(seeds)),
                               time_limit=30.0)


def cpp(body: str, head: str = "") -> str:
    return ("#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <unistd.h>\n#include <vector>\n"
            f"{head}\nint main() {{\n{body}\n{RECT}\nreturn 0;\n}}\n")


def run(pool, task, code):
    t0 = time.monotonic()
    ev = evaluate_program(task, code, pool)
    return ev, time.monotonic() - t0


def test_honest_rectangle_scores(pool, tmp_path):
    ev, _ = run(pool, small_task(tmp_path), cpp(""))
    assert ev.status is Status.OK and ev.score > 0 and ev.metrics["cases_ok"] == 2


def test_compile_error_is_syntax_with_compiler_message(pool, tmp_path):
    ev, _ = run(pool, small_task(tmp_path), "int main() { return undefined_name; }\n")
    assert ev.status is Status.SYNTAX
    assert "compile error" in ev.reason and "undefined_name" in ev.reason and "error" in ev.reason
    assert "program.cpp:1:" in ev.reason and "evoforge-sbx" not in ev.reason  # sandbox paths stripped


def test_infinite_loop_is_time_limit_per_case(pool, tmp_path):
    ev, wall = run(pool, small_task(tmp_path), cpp("volatile long x = 0; while (true) x++;"))
    assert ev.status is Status.TIMEOUT and "time limit" in ev.reason
    assert ev.metrics["cases_time_limit"] == 2
    assert wall < 15  # 2 cases x 1 s, compile included


def test_allocation_past_the_limit_is_memory(pool, tmp_path):
    # 64 MB blocks, one byte touched each: past 1024 MB of address space new throws (paging 1 GB in
    # would take longer than the 1 s case limit on a loaded machine, and the limit is on address space)
    body = ("std::vector<char*> v; for (int i = 0; i < 64; i++) { char* p = new char[64 << 20]; p[0] = 1; v.push_back(p); }\n"
            'fprintf(stderr, "allocated %zu blocks\\n", v.size());')
    ev, _ = run(pool, small_task(tmp_path), cpp(body))
    assert ev.status is Status.MEMORY and "memory limit" in ev.reason and "bad_alloc" in ev.reason


def test_segfault_is_runtime_error(pool, tmp_path):
    ev, _ = run(pool, small_task(tmp_path), cpp("volatile int* p = nullptr; *p = 1;"))
    assert ev.status is Status.CRASH and "SIGSEGV" in ev.reason


def test_wrong_answer_is_invalid(pool, tmp_path):
    ev, _ = run(pool, small_task(tmp_path), '#include <cstdio>\nint main() { printf("3\\n0 0\\n1 0\\n1 1\\n"); return 0; }\n')
    assert ev.status is Status.INVALID and "wrong answer" in ev.reason


def test_one_failing_case_scores_zero_not_the_run(pool, tmp_path):
    # reads the first target; crashes on one of the two seeds only (decided by its input)
    body = "int n, x, y; scanf(\"%d %d %d\", &n, &x, &y); if (x % 2) abort();"
    task = small_task(tmp_path, seeds=(1, 2, 3, 4))
    ev, _ = run(pool, task, cpp(body))
    if ev.status is Status.OK:
        assert 0 < ev.metrics.get("cases_runtime_error", 0) < 4 and "scored 0" in ev.reason
    else:  # all four first targets happened to be odd/even alike
        assert ev.status is Status.CRASH


def test_fork_bomb_and_stragglers_are_contained(pool, tmp_path):
    marker = tmp_path / "straggler_alive"
    # a forked child that outlives its case would write the marker later; a fork bomb must not hang the run
    body = (f'if (fork() == 0) {{ setsid(); sleep(3); FILE* f = fopen("{marker}", "w"); if (f) fclose(f); _exit(0); }}\n'
            "for (int i = 0; i < 200; i++) if (fork() < 0) break;")
    ev, wall = run(pool, small_task(tmp_path), cpp(body))
    assert wall < 25
    assert ev.status in (Status.OK, Status.CRASH, Status.KILLED, Status.TIMEOUT)
    time.sleep(3.5)
    assert not marker.exists()  # killed with its group / by the sandbox, and it could not write here anyway
    ev2, _ = run(pool, small_task(tmp_path), cpp(""))  # the pool still works
    assert ev2.status is Status.OK


def test_writes_outside_the_work_directory_fail(pool, tmp_path):
    target = tmp_path / "escaped.txt"
    pkg = Path(algo.__file__).with_name("escaped.txt")
    body = "".join(
        f'{{ FILE* f = fopen("{p}", "w"); if (f) {{ fputs("x", f); fclose(f); fprintf(stderr, "WROTE {p}\\n"); }} }}\n'
        for p in (target, pkg, "/tmp/evoforge_escaped.txt"))
    ev, _ = run(pool, small_task(tmp_path), cpp(body))
    assert ev.status is Status.OK  # the program itself runs on
    for p in (target, pkg, Path("/tmp/evoforge_escaped.txt")):
        assert not p.exists(), p


@pytest.mark.parametrize("own_uid", [True, False])
def test_program_cannot_ptrace_or_poke_its_evaluator(pool, tmp_path, own_uid):
    # same uid as the evaluator that judges it: attaching to it or opening its memory must fail.
    # With a dedicated uid the uid change already made the evaluator non-dumpable; without one
    # (not root, or drop_privileges=False) runner.protect_evaluator() is what stops it.
    head = "#include <sys/ptrace.h>\n#include <fcntl.h>\n#include <cerrno>"
    body = ('long r = ptrace(PTRACE_ATTACH, getppid(), 0, 0); fprintf(stderr, "attach %ld\\n", r);\n'
            'char p[64]; snprintf(p, sizeof p, "/proc/%d/mem", getppid()); int fd = open(p, O_RDWR);\n'
            'fprintf(stderr, "mem %d\\n", fd); if (r == 0 || fd >= 0) abort();')
    if own_uid or os.geteuid() != 0:
        ev, _ = run(pool, small_task(tmp_path), cpp(body, head))
    else:
        with SandboxPool(workers=1, drop_privileges=False) as same_uid_pool:
            ev, _ = run(same_uid_pool, small_task(tmp_path), cpp(body, head))
    assert ev.status is Status.OK, ev.reason  # abort() would make every case a runtime error


def test_python_program_same_contract(pool, tmp_path):
    task = small_task(tmp_path, language="python")
    ev, _ = run(pool, task, "print(4); print(0, 0); print(50000, 0); print(50000, 50000); print(0, 50000)\n")
    assert ev.status is Status.OK and ev.score > 0
    ev, _ = run(pool, task, "while True: pass\n")
    assert ev.status is Status.TIMEOUT
    ev, _ = run(pool, task, "x = bytearray(2 << 30)\n")
    assert ev.status is Status.MEMORY and "MemoryError" in ev.reason
    ev, _ = run(pool, task, "def f(:\n")
    assert ev.status is Status.SYNTAX  # the harness compiles a Python program first
