"""The command line under bad input and faults (issue 9): every finding reproduced as reported, now refused
or survived.

Each section is one item of the issue, most severe first. ``W`` is the tiny session warm start
(tests/conftest.py) and ``T`` the issue's tiny RL budget; a "finished run" is one RL run with that
budget, copied for each test that may damage it. The SIGKILL fault-injection test is at the end.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import math
import multiprocessing
import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
import torch

from minitepo.lab import checkpoint as checkpoint_module
from minitepo.lab.bench import BenchConfig
from minitepo.lab.checkpoint import FORMAT, VERSION, load_checkpoint, save_checkpoint
from minitepo.lab.cli import main
from minitepo.lab.compare import CompareConfig
from minitepo.lab.guards import WEIGHT_LIMIT, prepare_parent_folder
from minitepo.lab.quickstart import QuickstartConfig
from minitepo.lab.rl_config import RLConfig
from minitepo.lab.rl_run import RLRun
from minitepo.lab.runs import read_metrics
from minitepo.lab.sft_run import SFTConfig

T = ["--iterations", "1", "--prompts", "2", "--group-size", "2", "--minibatches", "1", "--pass-k", "0",
     "--no-progress", "--device", "cpu"]
SFT_T = ["--task", "add", "--levels", "1", "--steps", "2", "--batch-size", "2", "--eval-every", "2", "--n-layer", "1",
         "--n-head", "2", "--n-embd", "16", "--no-progress", "--device", "cpu"]


@pytest.fixture(scope="module")
def finished_rl(warm_start, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "rl"
    assert main(["rl", "--init", warm_start, "--out", str(out), *T]) == 0
    return out


@pytest.fixture(scope="module")
def finished_sft(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "sft"
    assert main(["sft", "--out", str(out), *SFT_T]) == 0
    return out


@pytest.fixture
def run(finished_rl, tmp_path) -> Path:
    """A copy of the finished RL run, free to damage."""
    return Path(shutil.copytree(finished_rl, tmp_path / "run"))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def one_line(capsys, command: str, kind: str = "error") -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"minitepo {command}: {kind}: "), err
    assert "\n" not in err and "Traceback" not in err, err
    return err


def poisoned_copy(source: str, path: Path, value: float) -> Path:
    """``source``'s checkpoint with one weight set to ``value``, written as a training run would have written it
    before weights were checked (``save_checkpoint`` now refuses such weights)."""
    data = load_checkpoint(source)
    data["model"] = {k: v.clone() for k, v in data["model"].items()}
    data["model"]["wte.weight"][0, 0] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(data, path)
    return path


# ---- 1. existing runs are never destroyed -----------------------------------------------------------------------

def test_rl_out_at_an_existing_run_is_refused_and_leaves_it_untouched(warm_start, run, capsys):
    before = snapshot(run)
    assert main(["rl", "--init", warm_start, "--out", str(run), *T]) == 2
    err = one_line(capsys, "rl")
    assert "already holds a run" in err and "--resume" in err and "another --out" in err and "--overwrite" in err
    assert snapshot(run) == before


def test_sft_out_at_an_existing_run_is_refused_and_leaves_it_untouched(finished_sft, tmp_path, capsys):
    run = Path(shutil.copytree(finished_sft, tmp_path / "sft"))
    before = snapshot(run)
    assert main(["sft", "--out", str(run), *SFT_T]) == 2
    assert "already holds a run" in one_line(capsys, "sft")
    assert snapshot(run) == before


@pytest.mark.parametrize("extra", [[], ["--overwrite"]])
def test_rl_never_writes_into_its_own_warm_starts_folder(warm_start, extra, capsys):
    folder = Path(warm_start).parent
    before = snapshot(folder)
    assert main(["rl", "--init", warm_start, "--out", str(folder), *T, *extra]) == 2
    assert "is the warm start's own folder" in one_line(capsys, "rl")
    assert snapshot(folder) == before


@pytest.mark.parametrize("resume", [[], ["--resume"]])
def test_a_typo_on_a_finished_run_is_refused_before_anything_is_touched(warm_start, run, resume, capsys):
    before = snapshot(run)
    assert main(["rl", "--init", warm_start, "--out", str(run), *T, "--algo", "grpo", "--kl-kind", "k9", *resume]) == 2
    assert "--kl-kind must be one of k1, k2, k3, got 'k9'" in one_line(capsys, "rl")
    assert snapshot(run) == before  # config.json too: a --resume with a typo no longer rewrites it


def test_overwrite_replaces_the_run_and_keeps_nothing_of_the_old_one(warm_start, run):
    (run / "metrics.jsonl").write_text('{"step": 0}\n{"step": 1}\n{"step": 2}\n{"step": 99}\n')
    assert main(["rl", "--init", warm_start, "--out", str(run), *T, "--overwrite"]) == 0
    assert [r["step"] for r in read_metrics(run)] == [0, 1]


def test_resume_and_overwrite_together_are_refused(warm_start, run, capsys):
    assert main(["rl", "--init", warm_start, "--out", str(run), *T, "--resume", "--overwrite"]) == 2
    assert "contradict" in one_line(capsys, "rl")


def test_a_second_quickstart_in_the_same_folder_replaces_it_by_default_or_refuses_with_no_overwrite(tmp_path, capsys):
    out = tmp_path / "qs"
    (out / "warmstart").mkdir(parents=True)
    (out / "warmstart" / "checkpoint.pt").write_bytes(b"a previous quickstart")
    assert main(["quickstart", "--out", str(out), "--no-overwrite", "--device", "cpu"]) == 2
    err = one_line(capsys, "quickstart")
    assert "already holds runs (warmstart/)" in err and "--overwrite" in err and "another --out" in err
    assert prepare_parent_folder(out, ("warmstart", "rl"), overwrite=True) == ["warmstart/"]  # the default: replace


def test_quickstart_and_compare_never_use_a_run_folder_as_their_parent(finished_rl, capsys):
    before = snapshot(finished_rl)
    assert main(["quickstart", "--out", str(finished_rl), "--device", "cpu"]) == 2
    assert "is a run folder itself" in one_line(capsys, "quickstart")
    assert snapshot(finished_rl) == before


def test_compare_refuses_existing_runs_before_the_first_one_starts(warm_start, finished_rl, tmp_path, capsys):
    out = tmp_path / "cmp"
    shutil.copytree(finished_rl, out / "tepo-seed1")
    argv = ["compare", "--algos", "grpo,tepo", "--seeds", "2", "--init", warm_start, "--iterations", "1",
            "--prompts", "2", "--group-size", "2", "--minibatches", "1", "--device", "cpu", "--out", str(out)]
    assert main(argv) == 2
    assert "already holds runs (tepo-seed1/)" in one_line(capsys, "compare")
    assert sorted(p.name for p in out.iterdir()) == ["tepo-seed1"], "grpo-seed0 was not started"


# ---- 2. every flag is checked before any work -------------------------------------------------------------------

BAD_FLAGS = [  # (command, flags, what the one-line error must say)
    ("rl", ["--grad-clip", "-1"], "--grad-clip must be a finite number >= 0 (0 disables clipping"),
    ("sft", ["--grad-clip", "-1"], "--grad-clip must be a finite number >= 0"),
    ("sft", ["--min-lr-frac", "-1"], "--min-lr-frac must be a finite number >= 0 and <= 1, got -1.0"),
    ("rl", ["--min-lr-frac", "-1"], "--min-lr-frac must be a finite number >= 0 and <= 1, got -1.0"),
    ("sft", ["--weight-decay", "-5"], "--weight-decay must be a finite number >= 0, got -5.0"),
    ("rl", ["--weight-decay", "-5"], "--weight-decay must be a finite number >= 0, got -5.0"),
    ("sft", ["--lr", "inf"], "--lr must be a finite number > 0, got inf"),
    ("rl", ["--lr", "inf"], "--lr must be a finite number > 0, got inf"),
    ("rl", ["--lr", "nan"], "--lr must be a finite number > 0, got nan"),
    ("rl", ["--temperature", "inf"], "--temperature must be a finite number > 0"),
    ("rl", ["--stop-at-accuracy", "7"], "--stop-at-accuracy must be a finite number >= 0 and <= 1"),
    ("rl", ["--max-new-tokens", "0"], "--max-new-tokens must be an integer >= 1, got 0"),
    ("rl", ["--group-size", "1"], "--group-size must be an integer >= 2 (a group of one has no relative advantage"),
    ("rl", ["--eps-low", "1.5"], "--eps-low must be a finite number >= 0 and < 1"),
    ("rl", ["--beta", "-1"], "--beta must be a finite number >= 0"),
    ("rl", ["--seed", "-1"], "--seed must be an integer >= 0"),
    ("rl", ["--algo", "tepo", "--mask-criterion", "guess"], "--mask-criterion must be one of measured, predicted"),
    ("sft", ["--settle-at", "2"], "--settle-at must be a finite number > 0 and <= 1"),
    ("sft", ["--settle-at", "0.5", "--settle-metric", "level/9"], "--settle-metric must be one of all, level/1"),
    ("sft", ["--n-embd", "30"], "--n-embd 30 must split into --n-head 2 heads of even size"),
    ("sft", ["--warmup", "-1"], "--warmup must be an integer >= 0"),
    ("quickstart", ["--rl-lr", "inf"], "--rl-lr must be a finite number > 0"),
    ("quickstart", ["--settle-at", "0"], "--settle-at must be a finite number > 0 and <= 1"),
    ("compare", ["--group-size", "1", "--iterations", "1"], "--group-size must be an integer >= 2"),
    ("compare", ["--target-accuracy", "1.5"], "--target-accuracy must be a finite number > 0 and <= 1"),
    ("bench", ["--batch", "0"], "--batch must be an integer >= 1"),
]


@pytest.mark.parametrize("command, flags, message", BAD_FLAGS, ids=[f"{c} {' '.join(f)}" for c, f, _ in BAD_FLAGS])
def test_a_bad_flag_value_is_one_line_naming_flag_value_and_range_before_anything_is_written(
        command, flags, message, warm_start, tmp_path, capsys):
    out = tmp_path / "out"
    base = {"rl": ["--init", warm_start, *T], "sft": SFT_T}.get(command, [])
    argv = [command, *base, *flags] + (["--out", str(out)] if command != "bench" else [])
    assert main(argv) == 2
    assert message in one_line(capsys, command)
    assert not out.exists()


def test_eval_refuses_a_negative_pass_k_before_the_greedy_evaluation(warm_start, capsys):
    assert main(["eval", warm_start, "--device", "cpu", "--pass-k", "-3"]) == 2
    assert "--pass-k must be an integer >= 0" in capsys.readouterr().err
    assert main(["eval", warm_start, "--device", "cpu", "--pass-k", "-3"]) == 2
    assert capsys.readouterr().out == "", "nothing was evaluated"


def test_plot_and_threads_flags_are_checked_too(finished_rl, tmp_path, capsys):
    assert main(["plot", str(finished_rl), "--out", str(finished_rl / "metrics.jsonl")]) == 2
    assert "--out must name a .png file" in one_line(capsys, "plot")
    assert main(["--threads", "0", "tasks"]) == 2
    assert "--threads must be a positive integer, got 0" in one_line(capsys, "tasks")


@pytest.mark.parametrize("argv, cores, threads", [(["tasks"], 2, 1), (["quickstart", "--settle-at", "0"], 2, 2),
                                                  (["quickstart", "--settle-at", "0"], 1, 1),
                                                  (["--threads", "1", "quickstart", "--settle-at", "0"], 2, 1)])
def test_the_quickstart_alone_defaults_to_two_threads_and_threads_overrides_it(argv, cores, threads, monkeypatch,
                                                                               capsys):
    import minitepo.lab.cli as cli
    import minitepo.device as device
    seen = []
    monkeypatch.setattr(device.os, "cpu_count", lambda: cores)
    monkeypatch.setattr(cli, "set_cpu_threads", lambda n, deterministic: seen.append((n, deterministic)))
    main(argv)  # the quickstart ones stop at the bad --settle-at, after the threads were set
    capsys.readouterr()
    assert seen == [(threads, threads > 1)]   # more than one CPU thread: deterministic algorithms


NUMERIC = [(cls, f.name) for cls in (RLConfig, SFTConfig, QuickstartConfig, CompareConfig, BenchConfig)
           for f in dataclasses.fields(cls) if f.type in ("int", "float", "int | None", "float | None")]


@pytest.mark.parametrize("cls, name", NUMERIC, ids=[f"{c.__name__}.{n}" for c, n in NUMERIC])
def test_library_callers_get_the_same_checks_for_every_numeric_field(cls, name):
    bad = float("nan") if "float" in {f.name: f.type for f in dataclasses.fields(cls)}[name] else -1
    with pytest.raises(ValueError, match="--" + name.replace("_", "-")):
        cls(**{name: bad})


# ---- 3. non-finite or diverging weights stop the run where it happens ------------------------------------------

@pytest.mark.parametrize("minibatches", ["1", "2"])
def test_a_diverging_rl_run_stops_naming_iteration_and_step_and_keeps_the_last_finite_checkpoint(
        warm_start, tmp_path, minibatches, capsys):
    out = tmp_path / "run"
    argv = ["rl", "--init", warm_start, "--out", str(out), *T, "--lr", "1e10", "--save-every", "1",
            "--iterations", "3", "--minibatches", minibatches]
    assert main(argv) == 1
    err = one_line(capsys, "rl", kind="stopped")  # a training fault (exit 1), not bad input (exit 2)
    assert "iteration 1, optimizer step 1: after the update, weight" in err and "diverged" in err
    data = load_checkpoint(out)  # the step-0 checkpoint: it loads, so every weight is finite and bounded
    assert data["step"] == 0
    assert all(torch.isfinite(w).all() and w.abs().max() <= WEIGHT_LIMIT for w in data["model"].values())


def test_a_diverging_sft_run_stops_and_does_not_claim_a_checkpoint_it_never_wrote(tmp_path, capsys):
    assert main(["sft", "--out", str(tmp_path / "s"), *SFT_T, "--lr", "1e10"]) == 1
    err = one_line(capsys, "sft", kind="stopped")
    assert "sft step 1: after the update, weight" in err and "no checkpoint was written yet" in err
    assert not (tmp_path / "s" / "checkpoint.pt").exists()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 4.9e9])
def test_a_checkpoint_with_non_finite_or_diverged_weights_is_refused_by_init_resume_and_eval(
        warm_start, run, tmp_path, value, capsys):
    bad = poisoned_copy(warm_start, tmp_path / "bad" / "checkpoint.pt", value)
    assert main(["rl", "--init", str(bad), "--out", str(tmp_path / "new"), *T]) == 2
    assert "cannot be used: weight 'wte.weight'" in one_line(capsys, "rl")
    assert not (tmp_path / "new").exists(), "refused before the step-0 evaluation"
    assert main(["eval", str(bad), "--device", "cpu"]) == 2
    assert "cannot be used" in one_line(capsys, "eval")
    poisoned_copy(str(run / "checkpoint.pt"), run / "checkpoint.pt", value)
    assert main(["rl", "--resume", "--out", str(run), "--iterations", "2"]) == 2
    assert "cannot be used" in one_line(capsys, "rl")


def test_save_checkpoint_refuses_non_finite_weights_and_keeps_the_previous_file(warm_start, tmp_path):
    path = Path(shutil.copy(warm_start, tmp_path / "checkpoint.pt"))
    before = path.read_bytes()
    data = load_checkpoint(path)
    data["model"]["wte.weight"][1, 1] = float("nan")
    with pytest.raises(FloatingPointError, match="not writing checkpoint .* the previous checkpoint is kept"):
        save_checkpoint(path, {k: v for k, v in data.items() if k not in ("format", "version")})
    assert path.read_bytes() == before


# ---- 4. --resume continues the same run, only longer -----------------------------------------------------------

def test_sft_resume_on_another_task_is_refused_and_the_checkpoint_is_not_relabelled(finished_sft, tmp_path, capsys):
    run = Path(shutil.copytree(finished_sft, tmp_path / "sft"))
    before = snapshot(run)
    assert main(["sft", "--resume", "--out", str(run), "--task", "mul", "--steps", "4"]) == 2
    err = one_line(capsys, "sft")
    assert "--task mul (the run: add)" in err and "Only --steps may change" in err
    assert snapshot(run) == before


def test_rl_resume_lists_every_changed_setting(run, capsys):
    before = snapshot(run)
    assert main(["rl", "--resume", "--out", str(run), "--iterations", "2", "--task", "mul", "--lr", "1e-3",
                 "--temperature", "0.5"]) == 2
    err = one_line(capsys, "rl")
    for change in ("--task mul (the run: add)", "--lr 0.001 (the run: 0.0001)", "--temperature 0.5 (the run: 1.0)"):
        assert change in err
    assert "Only --iterations may change" in err
    assert snapshot(run) == before


def test_rl_resume_needs_only_the_folder_and_the_new_length(run):
    assert main(["rl", "--resume", "--out", str(run), "--iterations", "2"]) == 0
    assert [r["step"] for r in read_metrics(run)] == [0, 1, 2]
    assert json.loads((run / "config.json").read_text())["prompts"] == 2, "left-out flags are the run's own"


def test_library_resume_with_a_changed_setting_is_refused(warm_start, run):
    config = RLConfig(init=warm_start, task="add", levels="1", iterations=2, prompts=2, group_size=2, minibatches=1,
                      pass_k=0, device="cpu", out=str(run), progress=False, resume=True, seed=5)
    with pytest.raises(ValueError, match=r"--seed 5 \(the run: 0\)"):
        RLRun(config).run()


# ---- 5. file-system faults: one line naming the path and the cause ----------------------------------------------

def test_out_naming_a_file_is_one_line(warm_start, tmp_path, capsys):
    (tmp_path / "file").write_text("not a folder")
    assert main(["rl", "--init", warm_start, "--out", str(tmp_path / "file"), *T]) == 2
    assert "is a file, not a folder" in one_line(capsys, "rl")


def test_a_read_only_out_is_one_line_naming_path_and_cause(warm_start, tmp_path, capsys, monkeypatch):
    out = tmp_path / "ro"
    out.mkdir()
    if os.geteuid() != 0:
        out.chmod(0o555)
    else:  # root writes anywhere: the read-only file system is simulated where the folder is first written
        def read_only(*args, **kwargs):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        monkeypatch.setattr(tempfile, "TemporaryFile", read_only)
    assert main(["rl", "--init", warm_start, "--out", str(out / "run"), *T]) == 2
    err = one_line(capsys, "rl")
    assert str(out / "run") in err and "cannot be written" in err


class FullDisk:
    """A file whose writes fail with ENOSPC once ``room`` bytes are written, as on a full disk."""

    def __init__(self, f, room: int):
        self.f, self.room = f, room

    def write(self, data) -> int:
        self.room -= len(data)
        if self.room < 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def test_a_full_disk_during_a_checkpoint_write_is_one_line_and_the_previous_checkpoint_survives(
        warm_start, tmp_path, capsys, monkeypatch):
    real_fdopen, writes = os.fdopen, []

    def fdopen(fd, *args, **kwargs):  # only save_checkpoint opens files this way
        writes.append(fd)
        f = real_fdopen(fd, *args, **kwargs)
        return FullDisk(f, room=4096) if len(writes) == 2 else f

    monkeypatch.setattr(checkpoint_module.os, "fdopen", fdopen)
    out = tmp_path / "run"
    assert main(["rl", "--init", warm_start, "--out", str(out), *T, "--iterations", "2", "--save-every", "1"]) == 1
    err = one_line(capsys, "rl", kind="stopped")
    assert str(out / "checkpoint.pt") in err and "No space left on device" in err
    assert "the previous checkpoint is intact" in err
    assert load_checkpoint(out)["step"] == 0
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint.pt", "config.json", "metrics.jsonl"], "no temp file"


def test_a_full_disk_while_logging_metrics_is_one_line_naming_the_file(warm_start, tmp_path, capsys, monkeypatch):
    real_open = Path.open

    def open_on_a_full_disk(self, mode="r", *args, **kwargs):
        f = real_open(self, mode, *args, **kwargs)
        return FullDisk(f, room=0) if self.name == "metrics.jsonl" and mode == "a" else f

    monkeypatch.setattr(Path, "open", open_on_a_full_disk)
    assert main(["rl", "--init", warm_start, "--out", str(tmp_path / "run"), *T]) == 1
    err = one_line(capsys, "rl", kind="stopped")
    assert str(tmp_path / "run" / "metrics.jsonl") in err and "No space left on device" in err


def test_resume_after_the_warm_start_was_swapped_for_another_model_size_is_one_line(
        warm_start, tmp_path, capsys):
    init = Path(shutil.copy(warm_start, tmp_path / "warm.pt"))
    out = tmp_path / "run"
    assert main(["rl", "--init", str(init), "--out", str(out), *T]) == 0
    assert main(["sft", "--out", str(tmp_path / "small"), *SFT_T]) == 0
    shutil.copy(tmp_path / "small" / "checkpoint.pt", init)  # another model size at the same path
    capsys.readouterr()
    assert main(["rl", "--resume", "--out", str(out), "--iterations", "2"]) == 2
    err = one_line(capsys, "rl")
    assert "its model differs" in err and "n_embd=64 there, 16 here" in err and "--init" in err


def test_weights_that_do_not_fit_their_config_name_the_first_misfit_in_one_line(warm_start, tmp_path, capsys):
    data = load_checkpoint(warm_start)
    data["model_config"] = {**data["model_config"], "n_embd": 32}
    torch.save(data, tmp_path / "misfit.pt")
    assert main(["eval", str(tmp_path / "misfit.pt"), "--device", "cpu"]) == 2
    err = one_line(capsys, "eval")
    assert "weights do not fit its model config" in err and "wte.weight is (" in err and "there" in err


# ---- 6. a torn last line in metrics.jsonl -------------------------------------------------------------------------

def test_a_torn_last_metrics_line_is_skipped_and_reported_by_plot_and_truncated_by_resume(run, tmp_path, capsys):
    with (run / "metrics.jsonl").open("a") as f:
        f.write('{"step": 2, "charts/rew')  # a crash mid-write
    assert main(["plot", str(run), "--out", str(tmp_path / "p.png")]) == 0
    err = capsys.readouterr().err
    assert "skipped the torn last line 3" in err and str(run / "metrics.jsonl") in err
    assert main(["rl", "--resume", "--out", str(run), "--iterations", "2"]) == 0
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [0, 1, 2]


def test_a_broken_line_before_the_last_is_an_error_naming_file_and_line(run):
    lines = (run / "metrics.jsonl").read_text().splitlines()
    (run / "metrics.jsonl").write_text("\n".join([lines[0], "{oops", *lines[1:]]) + "\n")
    with pytest.raises(ValueError, match=r"metrics.jsonl' line 2 is not a JSON record"):
        read_metrics(run)


# ---- 7. the small ones ------------------------------------------------------------------------------------------

def test_orphan_temp_files_of_a_crashed_write_are_removed_on_the_next_run(run):
    (run / "checkpoint.pt.x1y2.tmp").write_bytes(b"half a checkpoint")
    assert main(["rl", "--resume", "--out", str(run), "--iterations", "2"]) == 0
    assert not list(run.glob("*.tmp"))


class Arbitrary:
    def __reduce__(self):
        return (print, ("this would have run",))


def test_a_malicious_checkpoint_is_refused_without_suggesting_to_load_it_unsafely(tmp_path, capsys):
    torch.save({"format": FORMAT, "version": VERSION, "obj": Arbitrary()}, tmp_path / "evil.pt")
    assert main(["eval", str(tmp_path / "evil.pt"), "--device", "cpu"]) == 2
    captured = capsys.readouterr()
    assert "weights_only" not in captured.err and "likely succeed" not in captured.err
    assert "refused without running any of its code" in captured.err
    assert "this would have run" not in captured.out


def test_a_graceful_ctrl_c_exits_130_after_writing_a_checkpoint(warm_start, tmp_path, monkeypatch, capsys):
    original = RLRun.iterate

    def iterate_then_ctrl_c(self):
        record = original(self)
        self.stop_requested = True  # what the first SIGINT does
        return record

    monkeypatch.setattr(RLRun, "iterate", iterate_then_ctrl_c)
    out = tmp_path / "run"
    assert main(["rl", "--init", warm_start, "--out", str(out), *T, "--iterations", "3"]) == 130
    assert load_checkpoint(out)["step"] == 1
    assert "interrupted; resume with --resume" in capsys.readouterr().out


# ---- fault injection: SIGKILL while a checkpoint is being written -----------------------------------------------

KILL_RUN = [*T, "--iterations", "4", "--save-every", "1", "--eval-every", "2"]
KILL_MOMENTS = {  # where in the n-th checkpoint write (the first is step 0's) the process is killed
    "mid-write": (3, "write"),      # torch.save has written part of the temporary file
    "before-fsync": (2, "fsync"),   # the temporary file is complete but not yet on disk
    "before-rename": (4, "replace"),  # on disk under its temporary name; checkpoint.pt is still the old one
    "after-rename": (3, "after"),   # the new checkpoint is in place; the run was killed before logging on
}


def train_then_die(argv: list[str], nth_write: int, moment: str) -> None:
    """Child process: train, and SIGKILL itself at ``moment`` of its ``nth_write``-th checkpoint write."""
    writes = {"n": 0}
    real_fdopen, real_fsync, real_replace = os.fdopen, os.fsync, os.replace

    def die_if(at: str) -> None:
        if writes["n"] == nth_write and moment == at:
            os.kill(os.getpid(), signal.SIGKILL)

    def fdopen(fd, *args, **kwargs):
        writes["n"] += 1
        f = real_fdopen(fd, *args, **kwargs)
        return DiesMidWrite(f, die_if) if writes["n"] == nth_write and moment == "write" else f

    def fsync(fd):
        die_if("fsync")
        real_fsync(fd)

    def replace(src, dst):
        die_if("replace")
        real_replace(src, dst)
        die_if("after")

    checkpoint_module.os.fdopen, checkpoint_module.os.fsync, checkpoint_module.os.replace = fdopen, fsync, replace
    main(argv)
    os._exit(0)  # not reached when the kill happens


class DiesMidWrite(FullDisk):
    def __init__(self, f, die_if):
        super().__init__(f, room=1 << 40)
        self.die_if, self.written = die_if, 0

    def write(self, data) -> int:
        self.written += len(data)
        if self.written > 2048:
            self.die_if("write")
        return self.f.write(data)


def strip_time(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith("time/")} for r in records]


def test_sigkill_during_checkpoint_writes_then_resume_finishes_exactly_like_an_uninterrupted_run(warm_start, tmp_path):
    reference = tmp_path / "reference"
    assert main(["rl", "--init", warm_start, "--out", str(reference), *KILL_RUN]) == 0
    expected = strip_time(read_metrics(reference))
    fork = multiprocessing.get_context("fork")  # the child inherits the imported torch: no second start-up
    for name, (nth_write, moment) in KILL_MOMENTS.items():
        out = tmp_path / name
        child = fork.Process(target=train_then_die,
                             args=(["rl", "--init", warm_start, "--out", str(out), *KILL_RUN], nth_write, moment))
        child.start()
        child.join(timeout=120)
        assert child.exitcode == -signal.SIGKILL, f"{name}: the child was not killed ({child.exitcode})"
        saved = load_checkpoint(out)  # intact: the old one, or the new one once it was renamed into place
        assert saved["step"] == nth_write - (1 if moment == "after" else 2), name
        assert main(["rl", "--resume", "--out", str(out)]) == 0, name
        assert not list(out.glob("*.tmp")), f"{name}: temp file left behind"
        assert strip_time(read_metrics(out)) == expected, f"{name}: the resumed run differs from the reference"
        assert all(math.isfinite(r["charts/reward_mean"]) for r in read_metrics(out)[1:])


def test_two_runs_with_two_threads_end_in_identical_weights(warm_start, tmp_path, capsys):
    """With more than one CPU thread the command line switches on deterministic algorithms, so the quickstart's
    2-thread RL stage gives the same numbers twice (it did not before: seed 1 ended at 86.0% once, 90.5% once)."""
    import torch
    weights = []
    for run in ("a", "b"):
        out = tmp_path / run
        assert main(["--threads", "2", "rl", "--init", warm_start, "--algo", "tepo", "--iterations", "3",
                     "--prompts", "8", "--group-size", "4", "--minibatches", "2", "--dynamic-sampling", "--pass-k", "0",
                     "--eval-every", "3", "--no-progress", "--device", "cpu", "--out", str(out)]) == 0
        assert torch.are_deterministic_algorithms_enabled()
        weights.append(torch.load(out / "checkpoint.pt", weights_only=True)["model"])
    capsys.readouterr()
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_the_quickstart_refuses_a_batch_design_that_leaves_an_optimizer_step_empty():
    """Checked before the warm start trains for minutes, not when the RL stage is built."""
    with pytest.raises(ValueError, match=r"--minibatches must be at most the rollout's 2 x 2 rows"):
        QuickstartConfig(prompts=2, group_size=2, minibatches=5)
    with pytest.raises(ValueError, match=r"--group-size must be an integer >= 2 \(a group needs two answers"):
        QuickstartConfig(group_size=1)
    assert QuickstartConfig(prompts=2, group_size=2, minibatches=4).minibatches == 4
