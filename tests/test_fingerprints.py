"""benchmarks/tiny_run_fingerprints.py: what its hashes keep and leave out, and its
refusals. (Its runs are whole `:tiny` trainings, too slow for the suite; the records
in results/ come from it.)"""

from __future__ import annotations

import importlib
import sys

import pytest

fingerprints = importlib.import_module("benchmarks.tiny_run_fingerprints")


def test_the_results_hash_leaves_out_wall_clock_figures_and_keeps_every_other_number():
    results = {"vae": {"test_bce": 71.5, "seconds": 12.0, "images_per_second": 90.0,
                       "curve": [{"step": 0, "elapsed": 1.0}]}}
    timed_again = {"vae": {"test_bce": 71.5, "seconds": 99.0, "images_per_second": 1.0,
                           "curve": [{"step": 0, "elapsed": 7.0}]}}
    assert fingerprints.results_hash(results) == fingerprints.results_hash(timed_again)
    other_score = {"vae": {**results["vae"], "test_bce": 71.50001}}
    assert fingerprints.results_hash(results) != fingerprints.results_hash(other_score)
    other_step = {"vae": {**results["vae"], "curve": [{"step": 1, "elapsed": 1.0}]}}
    assert fingerprints.results_hash(results) != fingerprints.results_hash(other_step)


def test_lines_name_each_stage_or_the_failure():
    prints = {"results": "r" * 16, "params": {"mcqvae": "4:" + "a" * 16, "ct": "2:" + "b" * 16}}
    assert fingerprints.lines("ctvae_shapes3d", prints) == [
        f"ctvae_shapes3d results {'r' * 16}",
        f"ctvae_shapes3d mcqvae params 4:{'a' * 16}",
        f"ctvae_shapes3d ct params 2:{'b' * 16}"]
    assert fingerprints.lines("ctvae_celeba", {"failed": "error: no data"}) == [
        "ctvae_celeba FAILED: error: no data"]


def test_the_host_line_names_the_vector_extensions_xla_compiles_for(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("model name\t: Some CPU\nflags\t\t: fpu sse2 sse4_2 avx2 fma avx512f "
                       "pclmulqdq\n\nflags\t\t: fpu sse2 sse4_2 avx2 fma avx512f\n")
    assert fingerprints.host_cpu(cpuinfo).endswith("; avx2 avx512f fma sse4_2")
    arm = tmp_path / "arm"
    arm.write_text("Features\t: fp asimd evtstrm aes sve\n")
    assert fingerprints.host_cpu(arm).endswith("; asimd sve")
    assert fingerprints.host_cpu(tmp_path / "missing").endswith("; extensions unknown")


@pytest.mark.parametrize("argv, message", [
    (["--tree=/nonexistent/checkout"], "is not a causal_disent checkout"),
    (["--configs=betavae_dsprites_synth,no_such_config"], "has no no_such_config"),
    (["--configs=betavae_dsprites_synth", "--record=results/x.txt"], "a record is a .json file"),
])
def test_bad_arguments_are_one_error_line_before_any_run(monkeypatch, argv, message):
    monkeypatch.setattr(sys, "argv", ["benchmarks/tiny_run_fingerprints.py", *argv])
    monkeypatch.setattr(fingerprints, "fingerprint",
                        lambda *args: pytest.fail("a run started despite bad arguments"))
    with pytest.raises(SystemExit) as stop:
        fingerprints.main()
    assert str(stop.value).startswith("error: ") and message in str(stop.value)
    assert "\n" not in str(stop.value)
