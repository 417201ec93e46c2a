"""The task families of issue 16: listing, shipped initial scores through the sandbox, and each
family's verifier contract (host-side checks that a forged or broken result cannot pass)."""
from __future__ import annotations

import base64
import shutil

import numpy as np
import pytest

from evoforge.sandbox.base import Status
from evoforge.tasks import TaskError, all_task_names, builtin_names, get_task, run_in_process, task_families
from evoforge.tasks.catalog import load_program
from evoforge.tasks.evaluate import evaluate_program
from evoforge.tasks.families import FAMILIES, kernels, netcapture, singlecell, symreg

DETERMINISTIC = ["net-capture-py", "oscillator1", "oscillator2", "denoise-synthetic"]


def test_listing_by_family():
    fams = task_families()
    assert list(fams)[0] == "mathematics" and fams["mathematics"] == builtin_names()
    assert set(fams) == {"mathematics", *FAMILIES}
    for name in all_task_names():
        assert get_task(name).family in fams
    for fam, names in FAMILIES.items():
        for name in names:
            task = get_task(name)
            assert task.family == fam and task.evolve_blocks and task.evaluator_path.is_file()
            assert task.initial_program.count("EVOLVE-BLOCK-START") == 1 and "Score" in task.description
            with pytest.raises(TaskError):
                run_in_process(task)  # never runs outside the sandbox


def test_descriptions_say_what_is_ours():
    assert "NOT AtCoder's" in get_task("net-capture-cpp").description
    assert "SYNTHETIC" in get_task("denoise-synthetic").description
    assert "not LLM-SR's released files" in get_task("oscillator1").description


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_initial_program_scores_its_initial_score(pool, name):
    task = get_task(name)
    ev = evaluate_program(task, task.initial_program, pool)
    assert ev.status is Status.OK, ev.reason
    assert ev.score == pytest.approx(task.initial_score, rel=1e-6)


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_cpp_initial_equals_python_initial(pool):
    task = get_task("net-capture-cpp")
    ev = evaluate_program(task, task.initial_program, pool)
    assert ev.status is Status.OK and ev.score == pytest.approx(task.initial_score, rel=1e-12)
    assert ev.score == get_task("net-capture-py").initial_score


# -- algorithm engineering: the scorer -------------------------------------------------------------
def test_netcapture_scorer_and_polygon_rules():
    t, p = netcapture.generate(3)
    assert len({*map(tuple, t.tolist()), *map(tuple, p.tolist())}) == 2 * netcapture.N_POINTS
    assert (t == netcapture.generate(3)[0]).all()
    full = np.array([[0, 0], [netcapture.L, 0], [netcapture.L, netcapture.L], [0, netcapture.L]])
    assert netcapture.check_polygon(full) == "" and netcapture.captured(full, t).all()
    # an L-shape: the notch's points are outside, boundary points inside
    ell = np.array([[0, 0], [10, 0], [10, 5], [5, 5], [5, 10], [0, 10]])
    pts = np.array([[7, 7], [2, 8], [10, 5], [5, 7], [7, 5], [11, 0]])
    assert netcapture.captured(ell, pts).tolist() == [False, True, True, True, True, False]
    bad = {
        "self-crossing": np.array([[0, 0], [10, 0], [10, 10], [20, 10], [20, 5], [0, 5]]),
        "diagonal": np.array([[0, 0], [10, 10], [0, 10], [0, 5]]),
        "outside": np.array([[-1, 0], [10, 0], [10, 10], [-1, 10]]),
        "straight": np.array([[0, 0], [5, 0], [10, 0], [10, 10], [0, 10], [0, 5]]),
    }
    for why, poly in bad.items():
        assert netcapture.check_polygon(poly), why
    assert netcapture.score_case(3, "4\n0 0\n1 0\n1 1\n")[1].startswith("wrong answer")
    assert netcapture.score_case(3, "hello")[0] == 0.0


def test_netcapture_host_rejects_forged_results():
    from evoforge.tasks.families import algo

    assert not algo.verify({"cases": [{"seed": 1, "status": "ok", "stdout": "4\n0 0\n1 0\n1 1\n0 1\n"}]}).valid  # seeds differ
    forged = {"compile": None, "cases": [{"seed": s, "status": "ok", "stdout": "4\n0 0\n100000 0\n100000 100000\n0 100000\n"}
                                          for s in algo.SEEDS]}
    v = algo.verify(forged)  # whatever a program claims, the host scores the polygon itself
    assert v.valid and v.score < 0.2


# -- symbolic regression -----------------------------------------------------------------------------
def test_true_skeleton_fits_to_noise_level(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("import numpy as np\ndef equation(t, x, v, params):\n"
                    "    return params[0]*np.sin(params[1]*t) + params[2]*v**3 + params[3]*x*v + params[4]*x*np.exp(params[5]*x*x) + params[6]*x**3\n")
    value = symreg.evaluate_fit(str(prog), "oscillator2")
    v = symreg.verify(value, "oscillator2")
    assert v.valid and v.score < 1e-3 < get_task("oscillator2").initial_score
    assert v.metrics["nmse_ood"] < 0.2  # the linear start: 0.95 out of domain
    forged = dict(value, pred_id=value["pred_id"][:-1])
    assert not symreg.verify(forged, "oscillator2").valid


def test_symreg_data_documented_properties():
    d = symreg.dataset("oscillator1")
    assert len(d["train_y"]) > 1000 and len(d["ood_y"]) > 20
    box = d["train_X"][:, 1:]
    ood = d["ood_X"][:, 1:]
    assert np.any((ood < box.min(0)) | (ood > box.max(0)), axis=1).all()  # every OOD point leaves the box


# -- single-cell -------------------------------------------------------------------------------------
def test_mcv_scorer_orders_truth_raw_and_rejects_bad_outputs(tmp_path):
    X, lam = singlecell.synthetic(0)
    train, held = singlecell.mcv_split(X, 0)
    assert (train + held == X).all() and (train >= 0).all() and abs(train.sum() / X.sum() - 0.9) < 0.01
    assert singlecell.mcv_mse(lam * 0.9, held) < singlecell.mcv_mse(train.astype(float), held)
    good = [singlecell._pack(singlecell.mcv_split(singlecell.synthetic(**d)[0], d["seed"])[0].astype(float))
            for d in singlecell._datasets()]
    v = singlecell.verify_synthetic({"denoised": good})  # "no denoising" scores normalized 0
    assert v.valid and v.metrics["normalized"] == pytest.approx(0.0, abs=1e-6)
    neg = [dict(g) for g in good]
    shape = X.shape
    neg[0] = {"shape": list(shape), "f32": base64.b64encode((-np.ones(shape, np.float32)).tobytes()).decode()}
    assert "negative" in singlecell.verify_synthetic({"denoised": neg}).reason
    assert not singlecell.verify_synthetic({"denoised": good[:1]}).valid


def test_real_matrix_task_same_scorer(pool, tmp_path):
    X, _ = singlecell.synthetic(5, cells=60, genes=40)
    f = tmp_path / "counts.npz"
    np.savez(f, X=X)
    task = get_task(f"denoise-matrix:{f}")
    ev = evaluate_program(task, task.initial_program, pool)
    assert ev.status is Status.OK and ev.metrics["mse_raw"] > 0
    np.savez(tmp_path / "norm.npz", X=X / 3.0)
    with pytest.raises(TaskError, match="raw counts"):
        get_task(f"denoise-matrix:{tmp_path / 'norm.npz'}")
    with pytest.raises(TaskError):
        get_task(f"denoise-h5ad:{tmp_path / 'missing.h5ad'}")


# -- kernels -----------------------------------------------------------------------------------------
FAST_TRIMUL = load_program("trimul_batched.py")


@pytest.mark.slow  # ~10-20 s: two timed evaluations (python -m pytest -m slow tests/test_tasks_families.py)
def test_kernel_fast_program_beats_naive(pool):
    task = get_task("trimul-cpu")
    naive = evaluate_program(task, task.initial_program, pool)
    fast = evaluate_program(task, FAST_TRIMUL, pool)
    assert naive.status is Status.OK and fast.status is Status.OK, (naive.reason, fast.reason)
    assert fast.score > 1.3 * naive.score  # 2.4x measured (RESULTS.md); a ratio within one run, not a speed


def test_kernel_correct_program_scores_and_wrong_one_fails(pool):
    task = get_task("trimul-cpu")
    fast = evaluate_program(task, FAST_TRIMUL, pool)
    assert fast.status is Status.OK and fast.score > 0, fast.reason
    for key in ("runtime_ms", "interference", "iqr_rel_max", "loadavg_1m", "max_err"):
        assert key in fast.metrics
    wrong = FAST_TRIMUL.replace("+ w[\"out_norm_b\"]", "+ 0.5 + w[\"out_norm_b\"]")  # a shifted output LayerNorm
    assert wrong != FAST_TRIMUL
    ev = evaluate_program(task, wrong, pool)
    assert ev.status is Status.INVALID and "exceeds" in ev.reason


def test_kernel_host_recheck_catches_a_forged_check_output():
    x, mask, w = kernels.make_inputs(7, *kernels.CHECK[:4])
    ref = kernels.reference(x, mask, w).astype(np.float32)
    value = {"seed": 7, "check": base64.b64encode(ref.tobytes()).decode(), "medians_s": [0.01, 0.02]}
    assert kernels.verify(value).valid and kernels.verify(value).score == pytest.approx(1 / np.sqrt(0.01 * 0.02))
    value["check"] = base64.b64encode(np.zeros_like(ref).tobytes()).decode()
    assert not kernels.verify(value).valid


def test_h5ad_matrix_is_read_like_npz(tmp_path):
    anndata = pytest.importorskip("anndata", reason="the singlecell extra (anndata) is not installed")
    import scipy.sparse

    X, _ = singlecell.synthetic(6, cells=30, genes=20)
    f = tmp_path / "counts.h5ad"
    anndata.AnnData(scipy.sparse.csr_matrix(X.astype(np.float32))).write_h5ad(f)
    assert (singlecell.load_matrix(f) == X).all()
    assert get_task(f"denoise-h5ad:{f}").name == "denoise-counts"


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_cli_verify_takes_a_cpp_program(tmp_path):
    import typer
    from typer.testing import CliRunner

    from evoforge.cli.verify import register

    app = typer.Typer(pretty_exceptions_enable=False)
    register(app)
    bad = tmp_path / "bad.cpp"
    bad.write_text("int main() { return nope; }\n")
    r = CliRunner().invoke(app, ["verify", "net-capture-cpp", str(bad)])
    assert r.exit_code == 1 and "status: syntax" in r.stdout and "nope" in r.stdout
