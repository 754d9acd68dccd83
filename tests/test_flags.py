"""Every flag value ends in a clear status: generated from the command line itself, so a new flag is covered.

For every subcommand, every flag (those made from the config dataclasses and the hand-written ones) is given each
hostile value in turn (negative, zero, NaN, +-inf, huge, non-numeric, empty), in-process. The command must end with
status 0, 1 or 2 and no traceback; a refusal (2) is one line. The training functions are replaced by stubs that
record their config, so an accepted value costs nothing: this checks everything that happens before training.

Then every objective runs one tiny RL iteration with each of its documented switches (the choices of its loss's
and its shaping's options, and the data-side switches), from the session's tiny warm start: each trains (0) or is
refused in one line (2), by design.
"""

import argparse
import contextlib
import inspect
import io

import pytest

from minitepo.advantages import SHAPED_ADVANTAGES
import minitepo.lab.cli as cli
from minitepo.lab.rl_config import OBJECTIVE_CHOICES
from minitepo.losses import OBJECTIVES

HOSTILE = ("-1", "0", "nan", "inf", "-inf", "1e308", "1000000000000", "abc", "")
SUMMARY = {"iterations": 0, "seconds": 0.0, "start_accuracy": None, "final": {}, "interrupted": False,
           "checkpoint": "stub", "steps": 0, "accuracy": {}}


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def flags(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


def run(argv: list[str]) -> tuple[int, str]:
    """main(argv) in-process: its status (argparse's exit included) and what it wrote to stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            status = cli.main(argv)
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else 2
    return status, err.getvalue()


@pytest.fixture
def stubbed(monkeypatch, tmp_path):
    """The command line with its long-running work replaced by stubs, run in an empty folder."""
    monkeypatch.chdir(tmp_path)
    for name in ("train_sft", "train_rl", "run_compare", "run_quickstart", "run_bench", "plot_runs"):
        monkeypatch.setattr(cli, name, lambda *args, **kwargs: SUMMARY)
    return tmp_path


def required(name: str, parser: argparse.ArgumentParser) -> list[str]:
    """The positional arguments a subcommand needs (a checkpoint or run folder that does not exist)."""
    return ["missing"] if any(not a.option_strings for a in parser._actions) else []


CASES = [(name, flag.option_strings[0]) for name, parser in subcommands().items() for flag in flags(parser)]


@pytest.mark.parametrize("command, flag", CASES, ids=[f"{c} {f}" for c, f in CASES])
def test_a_hostile_flag_value_ends_in_a_clear_status(stubbed, command, flag):
    parser = subcommands()[command]
    action = next(a for a in flags(parser) if flag in a.option_strings)
    if isinstance(action, argparse.BooleanOptionalAction):
        values = [[flag], ["--no-" + flag[2:]], [flag, "abc"]]
    else:
        values = [[flag, value] for value in HOSTILE] + [[flag]]
    failures = []
    for given in values:
        try:
            status, err = run([command, *required(command, parser), *given])
        except BaseException as e:  # noqa: BLE001  (a traceback is exactly what this test is about)
            failures.append(f"{' '.join(given)!r}: {type(e).__name__}: {e}")
            continue
        if status not in (0, 1, 2):
            failures.append(f"{' '.join(given)!r}: status {status}")
        elif status == 2 and len(err.strip().splitlines()) != 1 and not err.startswith("usage:"):
            failures.append(f"{' '.join(given)!r}: refused in {len(err.strip().splitlines())} lines: {err!r}")
    assert not failures, f"minitepo {command} {flag}:\n" + "\n".join(failures)


@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_thread_count_ends_in_a_clear_status(stubbed, value):
    status, err = run(["--threads", value, "tasks"])
    assert status in (0, 2), (status, err)


def switches(algo: str) -> list[tuple[str, str]]:
    """(flag, value) for every documented switch of ``algo``: its loss's and its shaping's named options, and the
    data-side switches every objective takes."""
    accepted = set(inspect.signature(OBJECTIVES[algo]).parameters)
    if algo in SHAPED_ADVANTAGES:
        accepted |= set(inspect.signature(SHAPED_ADVANTAGES[algo]).parameters)
    out = [(name, value) for name, choices in OBJECTIVE_CHOICES.items() if name in accepted for value in choices]
    out += [("dynamic_sampling", None), ("no_dynamic_sampling", None), ("overlong_shaping", None),
            ("no_overlong_shaping", None)]
    return out


SWITCHES = [(algo, name, value) for algo in OBJECTIVES for name, value in switches(algo)]


@pytest.mark.parametrize("algo, name, value", SWITCHES,
                         ids=[f"{a}:{n}" + (f"={v}" if v else "") for a, n, v in SWITCHES])
def test_every_objective_trains_with_each_of_its_switches(warm_start, tmp_path, monkeypatch, algo, name, value):
    import minitepo.rl as rl
    monkeypatch.setattr(rl, "greedy_accuracy", lambda *args, **kwargs: {"all": 0.0})   # no held-out pass: fast
    given = ["--" + name.replace("_", "-")] + ([value] if value is not None else [])
    status, err = run(["rl", "--init", warm_start, "--algo", algo, *given, "--iterations", "1", "--prompts", "2",
                       "--group-size", "2", "--minibatches", "2", "--eval-every", "1", "--pass-k", "0",
                       "--device", "cpu", "--no-progress", "--out", str(tmp_path / "run")])
    assert status == 0 or (status == 2 and len(err.strip().splitlines()) == 1), (status, err)


def test_the_switch_runs_train(warm_start, tmp_path, monkeypatch):
    """The runs above do train (status 0 and a metrics record per iteration), so they check what they claim."""
    import minitepo.rl as rl
    monkeypatch.setattr(rl, "greedy_accuracy", lambda *args, **kwargs: {"all": 0.0})
    status, err = run(["rl", "--init", warm_start, "--algo", "tepo", "--mask-action", "gate", "--iterations", "1",
                       "--prompts", "2", "--group-size", "2", "--minibatches", "2", "--eval-every", "1", "--pass-k",
                       "0", "--device", "cpu", "--no-progress", "--out", str(tmp_path / "run")])
    assert status == 0, err
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 2
