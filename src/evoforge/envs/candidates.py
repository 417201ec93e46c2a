"""Candidate environment files for tests and the scripted demo: good ones, one failing at each
admission layer, and hostile ones. ``CANDIDATES[name] = (source, expected layer, reason fragment)``.
"""
from __future__ import annotations

GOOD = '''import random
import re

from evoforge.envs import VerifiableEnvironment


class ListSum(VerifiableEnvironment):
    name = "list_sum"
    max_difficulty = 5

    def generate(self, seed, difficulty):
        rng = random.Random(seed * 1000 + difficulty)
        xs = [rng.randint(1, 9 * difficulty) for _ in range(2 + difficulty)]
        return {"xs": xs}, sum(xs)

    def render(self, instance):
        return "What is the sum of " + ", ".join(map(str, instance["xs"])) + "? Answer with one integer."

    def score(self, instance, answer):
        found = re.findall(r"-?\\d+", answer)
        return 1.0 if found and int(found[-1]) == sum(instance["xs"]) else 0.0
'''

GOOD_MAX = (GOOD.replace("ListSum", "ListMax").replace('"list_sum"', '"list_max"')
            .replace("sum(xs)", "max(xs)").replace('sum(instance["xs"])', 'max(instance["xs"])')
            .replace("the sum of", "the largest of"))


def _edit(old: str, new: str, base: str = GOOD) -> str:
    assert old in base, old
    return base.replace(old, new)


_GEN = "        rng = random.Random(seed * 1000 + difficulty)\n"
CANDIDATES: dict[str, tuple[str, int, str]] = {
    "good": (GOOD, 5, ""),
    "good_max": (GOOD_MAX, 5, ""),
    "syntax": (_edit("def generate(self, seed, difficulty):", "def generate(self, seed difficulty):"), 0, "SyntaxError"),
    "no_subclass": ("def generate(seed, difficulty):\n    return 1, 1\n", 0, "found 0"),
    "two_subclasses": (GOOD + "\n\nclass Other(VerifiableEnvironment):\n    pass\n", 0, "found 2"),
    "raising_ctor": (_edit("    max_difficulty = 5\n", "    max_difficulty = 5\n\n    def __init__(self):\n"
                           "        raise RuntimeError('no config')\n"), 1, "RuntimeError: no config"),
    "missing_score": (GOOD.split("    def score")[0], 1, "does not implement score"),
    "unseeded_random": (_edit(_GEN, "        rng = random.Random()\n"), 2, "second call"),
    "clock_seeded": (_edit(_GEN, "        import time\n        rng = random.Random(int(time.time()) + seed)\n"),
                     2, "another process"),
    "hash_order": (_edit(_GEN, _GEN + "        tags = sorted(set('abcdefghijklmnopqrstuvwxyz'), key=hash)\n"
                         "        rng.shuffle(tags)\n        rng = random.Random(tags[0] + str(seed) + str(difficulty))\n"),
                   2, "another process"),
    "not_json": (_edit('return {"xs": xs}, sum(xs)', 'return {"xs": set(xs)}, sum(xs)'), 2, "JSON"),
    "constant_instances": (_edit(_GEN, "        rng = random.Random(difficulty)\n"), 3, "barely vary"),
    "answer_leaked": (_edit('"? Answer with one integer."', '"? (It is " + str(sum(instance["xs"])) + ".)"'),
                      3, "prompt contains the answer"),
    "accepts_anything": (_edit('return 1.0 if found and int(found[-1]) == sum(instance["xs"]) else 0.0',
                               "return 1.0"), 3, "empty answer scores 1"),
    "rejects_reference": (_edit('int(found[-1]) == sum(instance["xs"])', 'int(found[-1]) == sum(instance["xs"]) + 1'),
                          4, "reference answer"),
    "fractional_scores": (_edit('return 1.0 if found and int(found[-1]) == sum(instance["xs"]) else 0.0',
                                'return 1.0 if found and int(found[-1]) == sum(instance["xs"]) else 0.5 if found else 0.0'),
                          4, "must be 0 or 1"),
    "raises_on_garbage": (_edit('found = re.findall(r"-?\\d+", answer)', 'found = [int(answer.split()[-1])]'),
                          4, "score raised"),
    # hostile
    "infinite_loop": (_edit(_GEN, "        while True:\n            pass\n"), 2, "did not return within"),
    "loop_ignoring_alarm": (_edit(_GEN, "        import signal\n        signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                                  "        while True:\n            pass\n"), 2, "stopped by the sandbox"),
    "forks": (_edit(_GEN, "        import os\n        os.fork()\n" + _GEN), 2, "may not start processes"),
    "subprocess": (_edit(_GEN, "        import subprocess\n        subprocess.run(['true'])\n" + _GEN), 2,
                   "may not start processes"),
    "writes_outside": (_edit("    max_difficulty = 5\n", "    max_difficulty = 5\n\n    def __init__(self):\n"
                             "        open('/tmp/evoforge-envs-pwned', 'w').write('x')\n"), 1, "Error"),
}

# Reads what a host secret would be (an environment variable, a root-only file) and shows it in
# the prompt: the sandbox must leave it nothing to show. {SECRET_FILE} is filled in by the caller.
SECRET_READER = _edit("    def render(self, instance):\n        return ",
                      "    def render(self, instance):\n        import os\n"
                      "        try:\n            text = open({SECRET_FILE!r}).read()\n"
                      "        except OSError:\n            text = ''\n"
                      "        return os.environ.get('EVOFORGE_HOST_SECRET', '') + text + ")

# A yes/no environment: a policy that guesses gets about half right, so its pass rate lies
# inside (0, 1) -- what a test's tiny model needs to get environments admitted.
PARITY = '''import random
import re

from evoforge.envs import VerifiableEnvironment


class SumParity(VerifiableEnvironment):
    name = "sum_parity"
    max_difficulty = 3

    def generate(self, seed, difficulty):
        rng = random.Random(f"parity-{seed}-{difficulty}")
        xs = [rng.randint(1, 50) for _ in range(3 * difficulty)]
        return {"xs": xs}, sum(xs) % 2

    def render(self, instance):
        return ("Reply 1 if the sum of these numbers is odd and 0 if it is even: "
                + " ".join(map(str, instance["xs"])))

    def score(self, instance, answer):
        found = re.findall(r"\\d+", answer)
        return 1.0 if found and int(found[-1]) == sum(instance["xs"]) % 2 else 0.0
'''


class DemoPolicy:
    """A model-free stand-in for the policy in its three roles (``envs synth --backend demo``).

    Generator: one of the candidates above (good and bad) in a fenced block; reviewer: ACCEPT
    (now and then REJECT); solver: the sum/parity/largest number when it can read the question,
    right about half the time. Deterministic in (prompt, response index, seed): resumable.
    """

    name = "demo"
    POOL = ("good", "good_max", "syntax", "unseeded_random", "constant_instances", "answer_leaked",
            "accepts_anything", "rejects_reference", "good", "parity")

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def _draw(self, text: str, j: int, cfg_seed: int | None) -> int:
        import hashlib

        key = f"{self.seed}-{cfg_seed}-{j}-{text}".encode()
        return int.from_bytes(hashlib.sha256(key).digest()[:4], "big")

    def generate(self, prompts, cfg):
        import re

        from evoforge.llm.base import Response

        out = []
        for p in prompts:
            row = []
            for j in range(cfg.n):
                h = self._draw(p.text, j, cfg.seed)
                if p.text.startswith("[generator]"):
                    name = self.POOL[h % len(self.POOL)]
                    text = "```python\n" + (PARITY if name == "parity" else CANDIDATES[name][0]) + "```"
                elif p.text.startswith("[reviewer]"):
                    text = "REJECT: unclear" if h % 7 == 0 else "ACCEPT: well posed"
                else:
                    nums = [int(x) for x in re.findall(r"\d+", p.text.split(":")[-1] if "Reply" in p.text else p.text)]
                    value = (sum(nums) % 2 if "odd" in p.text else max(nums) if "largest" in p.text
                             else sum(nums)) if nums else 0
                    text = str(value if h % 2 else value + 1)
                row.append(Response(text=text))
            out.append(row)
        return out

    def close(self) -> None:
        pass
