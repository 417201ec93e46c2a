"""Sandbox side of EvoEnv: load a candidate environment file and check it, or use it.

This file's TEXT is the program of a sandbox request (generated code is hostile, so nothing of
it runs in the host): the host appends ``_SOURCE`` (the candidate), ``_PLAN`` and ``_NONCE`` and
calls one entry: ``probe`` (admission layers L1-L5), ``sample`` (prompts and reference answers
for (seed, difficulty) cases) or ``grade`` (scores of answers). Standard library only; the
candidate imports ``evoforge.envs`` itself.

Before each layer a marker line goes to stderr, so a run the sandbox had to kill (a loop that
ignores the per-call alarm) still tells the host how far it got. A candidate that knows this
file can fake its record; admission filters mistakes, the sandbox contains malice.
"""
import ast
import hashlib
import json
import os
import re
import signal
import sys
import time
import types

CANDIDATE_FILE = "env.py"  # the name tracebacks show for the candidate's lines
_SOURCE = ""
_PLAN = {}
_NONCE = ""


class _CallTimeout(BaseException):
    pass


class _Fail(Exception):
    def __init__(self, layer, reason):
        super().__init__(reason)
        self.layer, self.reason = layer, reason


def _on_alarm(signum, frame):
    raise _CallTimeout()


def _exc_line(exc):
    text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}".rstrip(": ")
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == CANDIDATE_FILE:
            line = tb.tb_lineno
        tb = tb.tb_next
    text = text[:240]
    return f"{text} (line {line})" if line else text


def _call(fn, *args):
    """(True, value) or (False, 'raised X: msg (line N)' / 'did not return within S s')."""
    limit = float(_PLAN.get("call_timeout", 2.0))
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return True, fn(*args)
    except _CallTimeout:
        return False, f"did not return within {limit:g} s"
    except BaseException as exc:  # SystemExit and friends too: the candidate does not end the probe
        return False, "raised " + _exc_line(exc)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _mark(layer):
    if not _NONCE:
        return
    try:
        os.write(2, f"\n{_NONCE} L{layer}\n".encode())
    except OSError:
        pass


def _canon(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _digest(text):
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _base_name(node):
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _refuse(*_a, **_k):
    raise PermissionError("environments may not start processes")


def _guard_processes():
    """Best effort: the usual ways to start a process raise (the sandbox still holds the rest)."""
    import subprocess

    for name in ("fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp", "execv", "execve",
                 "execl", "execle", "execlp", "execlpe", "execvp", "execvpe", "spawnl", "spawnle", "spawnlp",
                 "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe"):
        if hasattr(os, name):
            setattr(os, name, _refuse)
    subprocess.Popen = _refuse
    try:
        import _posixsubprocess

        _posixsubprocess.fork_exec = _refuse
    except ImportError:
        pass


def _load(source, guard=True):
    """L1 parse and L2 instantiate: the environment object (raises _Fail)."""
    try:
        tree = ast.parse(source, CANDIDATE_FILE)
    except SyntaxError as exc:
        raise _Fail(0, f"L1 parse: SyntaxError: {exc.msg} (line {exc.lineno})") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise _Fail(0, f"L1 parse: {type(exc).__name__}: {exc}") from None
    names = [n.name for n in tree.body if isinstance(n, ast.ClassDef)
             and any(_base_name(b) == "VerifiableEnvironment" for b in n.bases)]
    if len(names) != 1:
        raise _Fail(0, f"L1 parse: expected exactly one subclass of VerifiableEnvironment, found {len(names)}")
    code = compile(tree, CANDIDATE_FILE, "exec")
    from evoforge.envs.base import VerifiableEnvironment as base

    _mark(2)
    if guard:
        _guard_processes()
    module = types.ModuleType("evoenv_candidate")
    module.__file__ = CANDIDATE_FILE
    sys.modules["evoenv_candidate"] = module
    ok, err = _call(exec, code, module.__dict__)
    if not ok:
        raise _Fail(1, f"L2 instantiate: loading the file {err}")
    cls = module.__dict__.get(names[0])
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise _Fail(1, f"L2 instantiate: {names[0]} does not derive from evoforge.envs.VerifiableEnvironment")
    for method in ("generate", "render", "score"):
        if getattr(cls, method, None) is getattr(base, method):
            raise _Fail(1, f"L2 instantiate: {names[0]} does not implement {method}")
    ok, env = _call(cls)
    if not ok:
        raise _Fail(1, f"L2 instantiate: {names[0]}() {env}")
    name, top = getattr(env, "name", None), getattr(env, "max_difficulty", 5)
    if not (isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9_.\-]{1,64}", name)):
        raise _Fail(1, f"L2 instantiate: name must be a short identifier (letters, digits, _.-), got {name!r:.80}")
    if not (isinstance(top, int) and 1 <= top <= 1000):
        raise _Fail(1, f"L2 instantiate: max_difficulty must be an int in 1..1000, got {top!r:.40}")
    return env


def _difficulties(env):
    top = env.max_difficulty
    return sorted({1, (1 + top) // 2, top})


def _cases(env):
    return [(s, d) for d in _difficulties(env) for s in _PLAN.get("seeds", range(8))]


def _observe(env, seed, difficulty, layer=2):
    """generate + render + format_answer of one case: (instance, answer, answer text, prompt)."""
    where = f"generate({seed}, {difficulty})"
    ok, out = _call(env.generate, seed, difficulty)
    if not ok:
        raise _Fail(layer, f"L3 determinism: {where} {out}")
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise _Fail(layer, f"L3 determinism: {where} must return (instance, answer), got {type(out).__name__}")
    instance, answer = out
    try:
        canon = (_canon(instance), _canon(answer))
    except (TypeError, ValueError, RecursionError) as exc:
        raise _Fail(layer, f"L3 determinism: {where}: instance/answer not JSON-serialisable ({exc})") from None
    ok, prompt = _call(env.render, instance)
    if not ok or not isinstance(prompt, str) or not prompt.strip():
        got = prompt if not ok else f"returned {type(prompt).__name__} {str(prompt)[:40]!r}"
        raise _Fail(layer, f"L3 determinism: render(instance of {where}) {got} (a non-empty str is needed)")
    if len(prompt) > int(_PLAN.get("max_prompt_chars", 16000)):
        raise _Fail(layer, f"L3 determinism: render(instance of {where}) is {len(prompt)} characters long")
    ok, text = _call(env.format_answer, answer)
    if not ok or not isinstance(text, str):
        raise _Fail(layer, f"L3 determinism: format_answer(answer of {where}) {text if not ok else 'is not a str'}")
    return instance, answer, text, prompt, (_digest(canon[0]), _digest(canon[1]), _digest(prompt))


def _shift_clocks(offset):
    for name in ("time", "monotonic", "perf_counter"):
        real = getattr(time, name)
        setattr(time, name, lambda real=real: real() + offset)
        real_ns = getattr(time, name + "_ns")
        setattr(time, name + "_ns", lambda real_ns=real_ns: real_ns() + int(offset * 1e9))


def cross_main(payload):
    """In a fresh interpreter (another hash seed, clocks shifted by three days): the digests of every case."""
    global _NONCE
    _NONCE = ""  # the first process marks the layers, not this one
    out_fd = os.dup(1)
    os.dup2(2, 1)  # the candidate's prints go to stderr, the answer to the saved stdout
    _PLAN.update(payload["plan"])
    _shift_clocks(3 * 86400 + 0.5)
    try:
        env = _load(payload["source"])
        result = {"digests": [list(_observe(env, s, d)[4]) for s, d in _cases(env)]}
    except _Fail as exc:
        result = {"error": exc.reason}
    os.write(out_fd, json.dumps(result).encode())


def _start_cross():
    import subprocess

    boot = ("import json, sys; d = json.loads(sys.stdin.read()); sys.path[:0] = d['path']; "
            "g = {'__name__': 'evoenv_cross'}; exec(compile(d['probe'], 'probe.py', 'exec'), g); g['cross_main'](d)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONHASHSEED"}  # unset: a random hash seed
    proc = subprocess.Popen([sys.executable, "-I", "-c", boot], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=env, cwd=os.getcwd())
    with open(__file__, encoding="utf-8") as f:
        me = f.read()
    payload = json.dumps({"path": list(sys.path), "probe": me, "source": _SOURCE, "plan": _PLAN})
    return proc, payload


def _score(env, instance, text):
    """The score as a float, or a string saying what went wrong."""
    ok, value = _call(env.score, instance, text)
    if not ok:
        return "score " + value
    if not isinstance(value, (str, bytes)) and hasattr(value, "__float__"):  # numpy scalars too
        try:
            number = float(value)
        except Exception:
            number = float("nan")
        if number == number:
            return number
    return f"score returned a {type(value).__name__}"


def _perturb(text, others):
    """Answers that are near the reference but should be wrong."""
    out = []
    ints = list(re.finditer(r"-?\d+", text))
    for m in {ints[0].span(): ints[0], ints[-1].span(): ints[-1]}.values() if ints else []:
        v = int(m.group())
        for w in (v + 1, v - 1, -v if v else 7, v * 2 + 3):
            out.append(text[: m.start()] + str(w) + text[m.end():])
    if len(ints) > 1:
        cut = ints[-2].end()
        out.append(text[:cut] + text[ints[-1].end():])  # the last number dropped
    digits = [i for i, ch in enumerate(text) if ch.isdigit()]
    for i in digits[:1] + digits[-1:]:
        flip = "1" if text[i] == "0" else "0" if text[i] == "1" else str((int(text[i]) + 1) % 10)
        out.append(text[:i] + flip + text[i + 1:])
    out += [text[::-1], text[:-1], text + (text[-1:] or "x")] + list(others[:2])
    return [p for p in dict.fromkeys(out) if p != text]


def _judge(env, cases):
    """L4 and L5 on the observed cases (raises _Fail)."""
    _mark(4)
    by_difficulty = {}
    for c in cases:
        by_difficulty.setdefault(c["difficulty"], set()).add(c["digests"][0])
    for d, seen in by_difficulty.items():
        total = sum(1 for c in cases if c["difficulty"] == d)
        if len(seen) * 2 < total:
            raise _Fail(3, f"L4 non-triviality: instances barely vary across seeds ({len(seen)} distinct of {total} at difficulty {d})")
    if any(_score(env, c["instance"], "") == 1.0 for c in cases):
        raise _Fail(3, "L4 non-triviality: an empty answer scores 1")
    word = [len(c["text"].strip()) >= 2 and re.search(r"(?<![\w.])" + re.escape(c["text"].strip()) + r"(?![\w])", c["prompt"])
            is not None for c in cases]
    if sum(word) * 4 >= 3 * len(cases):
        raise _Fail(3, f"L4 non-triviality: the prompt contains the answer (in {sum(word)} of {len(cases)} instances)")
    as_prompt = [_score(env, c["instance"], c["prompt"]) == 1.0 for c in cases]
    if sum(as_prompt) * 4 >= 3 * len(cases):  # below that, a yes/no answer can score by chance
        raise _Fail(3, f"L4 non-triviality: the prompt itself scores 1 as an answer (in {sum(as_prompt)} of {len(cases)} instances)")
    texts = [c["text"] for c in cases]
    mode = max(set(texts), key=texts.count)
    for const in list(_PLAN.get("constants", [])) + [mode]:
        hits = [_score(env, c["instance"], const) == 1.0 for c in cases]
        if all(hits):
            raise _Fail(3, f"L4 non-triviality: the constant answer {const[:60]!r} scores 1 on every instance")
    _mark(5)
    zeros = total = 0
    for c in cases:
        where = f"generate({c['seed']}, {c['difficulty']})"
        ref = _score(env, c["instance"], c["text"])
        if isinstance(ref, str):
            raise _Fail(4, f"L5 scoring: {ref} on the reference answer {c['text'][:60]!r} of {where}")
        if ref != 1.0:
            raise _Fail(4, f"L5 scoring: the reference answer {c['text'][:60]!r} of {where} scores {ref} (must be 1)")
        others = [o["text"] for o in cases if o["difficulty"] == c["difficulty"] and o["text"] != c["text"]]
        wrong = _perturb(c["text"], others)
        case_zeros = 0
        for answer in wrong + list(_PLAN.get("garbage", [])):
            s = _score(env, c["instance"], answer)
            if isinstance(s, str):
                raise _Fail(4, f"L5 scoring: {s} on the answer {answer[:60]!r} ({where})")
            if s not in (0.0, 1.0):
                raise _Fail(4, f"L5 scoring: score returned {s} on {answer[:60]!r} ({where}); scores must be 0 or 1")
            if answer in _PLAN.get("garbage", []):
                if s != 0.0:
                    raise _Fail(4, f"L5 scoring: the garbage answer {answer[:60]!r} scores 1 ({where})")
                continue
            total += 1
            case_zeros += s == 0.0
        zeros += case_zeros
        if wrong and not case_zeros:
            raise _Fail(4, f"L5 scoring: every perturbed answer scores 1 on {where} (e.g. {wrong[0][:60]!r})")
    if total and zeros * 2 < total:
        raise _Fail(4, f"L5 scoring: perturbed answers score 1 too often ({total - zeros} of {total})")
    return {"perturbed": total, "perturbed_zero": zeros}


def probe():
    """Admission L1-L5: {'layer': highest passed 0-5, 'reason': first failure or '', 'name', 'stats'}."""
    t0 = time.perf_counter()
    _mark(1)
    cross = None
    try:
        try:
            ast.parse(_SOURCE, CANDIDATE_FILE)
        except BaseException:
            pass  # _load reports it; the second process is only worth starting for a file that parses
        else:
            cross = _start_cross()
        env = _load(_SOURCE)
        _mark(3)
        cases, again = [], {}
        for seed, d in _cases(env):
            instance, answer, text, prompt, digests = _observe(env, seed, d)
            cases.append({"seed": seed, "difficulty": d, "instance": instance, "text": text, "prompt": prompt,
                          "digests": digests})
        for c in reversed(cases):  # again, in another order: state carried between calls shows up
            again[(c["seed"], c["difficulty"])] = _observe(env, c["seed"], c["difficulty"])[4]
        for c in cases:
            if again[(c["seed"], c["difficulty"])] != c["digests"]:
                what = ("instance", "answer", "prompt")[[a != b for a, b in zip(again[(c["seed"], c["difficulty"])], c["digests"])].index(True)]
                raise _Fail(2, f"L3 determinism: generate({c['seed']}, {c['difficulty']}) gives another {what} on a second call")
        proc, payload = cross
        try:
            raw, _ = proc.communicate(payload.encode(), timeout=float(_PLAN.get("cross_timeout", 20.0)))
            other = json.loads(raw.decode() or "{}")
        except Exception as exc:  # TimeoutExpired, bad JSON
            proc.kill()
            raise _Fail(2, f"L3 determinism: the check in a second process failed ({type(exc).__name__})") from None
        if "error" in other or len(other.get("digests", [])) != len(cases):
            raise _Fail(2, f"L3 determinism: in a second process: {other.get('error', 'no result')}")
        for c, d in zip(cases, other["digests"]):
            if list(c["digests"]) != d:
                raise _Fail(2, f"L3 determinism: generate({c['seed']}, {c['difficulty']}) differs in another process "
                               "(hash order, clock or unseeded randomness?)")
        stats = _judge(env, cases)
        stats.update(cases=len(cases), max_difficulty=env.max_difficulty, seconds=round(time.perf_counter() - t0, 3))
        return {"layer": 5, "reason": "", "name": env.name, "stats": stats}
    except _Fail as exc:
        if cross is not None and cross[0].poll() is None:
            cross[0].kill()
        return {"layer": exc.layer, "reason": exc.reason, "name": "", "stats": {}}


def sample():
    """Prompts and reference answers: [{'prompt', 'answer'} or {'error'}] per (seed, difficulty) of _PLAN['cases']."""
    env = _load(_SOURCE)
    out = []
    for seed, d in _PLAN["cases"]:
        try:
            _, _, text, prompt, _ = _observe(env, int(seed), int(d))
            out.append({"prompt": prompt, "answer": text})
        except _Fail as exc:
            out.append({"error": exc.reason})
    return out


def grade():
    """Scores (0.0 when anything goes wrong) of _PLAN['answers'] = [[seed, difficulty, text], ...]."""
    env = _load(_SOURCE)
    out, made = [], {}
    for seed, d, text in _PLAN["answers"]:
        key = (int(seed), int(d))
        if key not in made:
            ok, got = _call(env.generate, *key)
            made[key] = got[0] if ok and isinstance(got, (tuple, list)) and len(got) == 2 else None
        s = _score(env, made[key], str(text)) if made[key] is not None else "generate failed"
        out.append(s if s in (0.0, 1.0) else 0.0)
    return out
