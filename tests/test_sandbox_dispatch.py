"""run_iter and the pipelined dispatcher: completion order, retries of queued requests, early stops."""
from __future__ import annotations

import os
import signal
import threading

import pytest

from evoforge.sandbox import EvalRequest, SandboxError, SandboxPool, Status
from evoforge.sandbox import dispatch

VALUE = "def solve():\n    return {v}\n"
SLEEP = "import time\ndef solve():\n    time.sleep({s})\n    return {v}\n"


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(workers=2, preload=()) as p:
        yield p


def test_run_iter_yields_in_completion_order(pool):
    reqs = [EvalRequest(code=SLEEP.format(s=1.0, v=0), timeout=10)] + [EvalRequest(code=VALUE.format(v=i)) for i in range(1, 9)]
    order = [(i, r.value) for i, r in pool.run_iter(reqs)]
    assert sorted(order) == [(i, i) for i in range(9)]  # each index once, with its own result
    # the slow one comes out among the last (a request pipelined behind it may wait for it too)
    assert (0, 0) in order[-2:] and order[0] != (0, 0)
    assert pool.stray_processes() == []


def test_many_small_requests_through_the_pipeline(pool):
    # More requests than slots: the second request of each slot is queued in its pipe.
    res = pool.run_many([EvalRequest(code=VALUE.format(v=i)) for i in range(40)])
    assert [r.value for r in res] == list(range(40))
    big = "X = '" + "x" * (dispatch.PIPELINE_MAX_FRAME * 2) + "'\n" + VALUE.format(v="len(X)")
    res = pool.run_many([EvalRequest(code=big)] * 6)  # too big to queue: one at a time per slot
    assert all(r.value == dispatch.PIPELINE_MAX_FRAME * 2 for r in res)


def test_queued_requests_survive_a_worker_that_dies(pool):
    # Each slot gets a running request and (pipelined) a queued one; killing the zygotes fails
    # the running ones and reruns the queued ones on fresh zygotes.
    reqs = [EvalRequest(code=SLEEP.format(s=30, v=-1), timeout=40) for _ in range(2)]
    reqs += [EvalRequest(code=VALUE.format(v=i)) for i in range(8)]
    zygotes = pool.zygote_pids()
    timer = threading.Timer(1.5, lambda: [os.kill(p, signal.SIGKILL) for p in zygotes])
    timer.start()
    try:
        res = pool.run_many(reqs)
    finally:
        timer.cancel()
    assert all(r.status is Status.CRASH and "worker died" in r.error for r in res[:2])
    assert [r.value for r in res[2:]] == list(range(8))
    if os.geteuid() == 0:
        assert pool.stray_processes() == []


def test_stopping_early_leaves_the_pool_consistent(pool):
    it = pool.run_iter([EvalRequest(code=VALUE.format(v=i)) for i in range(20)])
    first = next(it)
    assert first[1].status is Status.OK
    it.close()  # in-flight answers are drained, the rest never runs
    assert [r.value for r in pool.run_many([EvalRequest(code=VALUE.format(v=i)) for i in range(4)])] == [0, 1, 2, 3]
    assert pool.stray_processes() == []


def test_nested_use_in_one_thread_is_refused(pool):
    it = pool.run_iter([EvalRequest(code=VALUE.format(v=1))] * 3)
    next(it)
    with pytest.raises(SandboxError, match="still being consumed"):
        pool.run_many([EvalRequest(code=VALUE.format(v=2))])
    assert len(list(it)) == 2
    with pytest.raises(ValueError, match="timeout"):  # bad input raises at the call, before anything runs
        pool.run_iter([EvalRequest(code="", timeout=-1)])


def test_scipy_is_made_warm_only_for_programs_that_name_it():
    probe = "import sys\ndef solve():\n    return [m for m in ('numpy', 'sc' + 'ipy.optimize') if m in sys.modules]\n"
    with SandboxPool(workers=1) as p:
        assert p.run(EvalRequest(code=probe)).value == ["numpy"]
        uses = "import scipy.optimize\n" + probe
        assert p.run(EvalRequest(code=uses)).value == ["numpy", "scipy.optimize"]
        assert p.run(EvalRequest(code=probe)).value == ["numpy", "scipy.optimize"]  # warm from now on
    with SandboxPool(workers=1, eager=None) as p:
        assert p.run(EvalRequest(code=probe)).value == ["numpy", "scipy.optimize"]
