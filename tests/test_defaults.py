"""Every default is defined once, and reaches everything that uses it unchanged.

The objective's hyper-parameters (the clip ranges, TEPO's ``mask_tol``) are defined by the loss's signature (or,
for ``mask_tol``, by ``TEPO_MASK_TOL``); the learning rate and its schedule by the core's ``TrainerConfig`` and
``SupervisedConfig``, and by the lab's presets (``replace(TrainerConfig(), ...)``). These tests walk each one from
where it is defined to what the trainer passes the loss, what ``minitepo rl``'s flags build, and what the verl and
TRL adapters default to."""

import dataclasses
import inspect

import pytest

from minitepo.lab.cli import build_parser, run_config
from minitepo.lab.compare import COMPARE, CompareConfig, parse_entry
from minitepo.lab.mask_tokens import MaskTokensConfig
from minitepo.lab.quickstart import QUICKSTART, WARM_START_RULES, QuickstartConfig, rl_stage
from minitepo.lab.rl_config import LOSS_PARAMS, RUN_FIELDS, SHAPING_PARAMS, SHARED_FIELDS, RLConfig
from minitepo.lab.sft_run import SFTConfig
from minitepo.losses import OBJECTIVES, TEPO_MASK_TOL, tepo_loss, tepo_mask
from minitepo.optim import lr_at
from minitepo.rl import TrainerConfig
from minitepo.sft import SupervisedConfig
from toy_tasks import make_task

CLIP_RANGES = ("eps_low", "eps_high", "delta_low", "delta_high", "dual_clip")


def signature_default(function, name: str):
    return inspect.signature(function).parameters[name].default


def rl_flags(*argv: str) -> RLConfig:
    """The RLConfig that ``minitepo rl ARGV`` builds."""
    return run_config(RLConfig, build_parser().parse_args(["rl", *argv]))


@pytest.mark.parametrize("algo", OBJECTIVES)
def test_each_objectives_clip_ranges_reach_it_from_its_signature_untouched(algo):
    function = OBJECTIVES[algo]
    for name in CLIP_RANGES:
        if name not in inspect.signature(function).parameters:
            continue
        want = signature_default(function, name)
        trainer = rl_flags("--algo", algo).trainer_config(make_task("add"))
        assert name not in trainer.objective_kwargs(), f"{algo}: the trainer passes its own {name}"
        assert trainer.objective_setting(name) == want, f"{algo}.{name}: trainer {trainer.objective_setting(name)}, " \
                                                        f"signature {want}"
        assert RLConfig(algo=algo).loss_default(name) == want
        assert getattr(RLConfig(), name) is None, f"--{name} defaults to None: the objective's own"


def test_mask_tol_is_tepo_mask_tol_in_the_trainer_and_wherever_the_trainer_passes_it():
    trainer = rl_flags("--algo", "tepo").trainer_config(make_task("add"))
    assert trainer.objective_setting("mask_tol") == TEPO_MASK_TOL
    assert trainer.objective_kwargs().get("mask_tol", signature_default(tepo_loss, "mask_tol")) == TEPO_MASK_TOL
    assert RLConfig(algo="tepo").resolved_reading()["algo"] == "tepo"
    assert TrainerConfig(algo="tepo").objective_setting("mask_tol") == TEPO_MASK_TOL
    # an explicit value wins over every default
    assert rl_flags("--algo", "tepo", "--mask-tol", "0").trainer_config(make_task("add")).objective_setting(
        "mask_tol") == 0.0


def test_mask_tol_is_defined_once_by_the_losses_so_the_trainer_adds_nothing():
    assert signature_default(tepo_loss, "mask_tol") == TEPO_MASK_TOL
    assert signature_default(tepo_mask, "tol") == TEPO_MASK_TOL
    assert all(TrainerConfig(algo=algo).objective_kwargs() == {} for algo in OBJECTIVES)


def test_the_verl_adapter_defaults_to_the_losss_clip_ranges():
    verl = pytest.importorskip("minitepo.integrations.verl")
    config = verl.TEPOPolicyLossConfig()
    for name in ("delta_low", "delta_high", "dual_clip"):
        assert getattr(config, name) == signature_default(tepo_loss, name), name
    assert signature_default(verl.tepo_overrides, "clip_ratio_low") == signature_default(tepo_loss, "eps_low")
    assert signature_default(verl.tepo_overrides, "clip_ratio_high") == signature_default(tepo_loss, "eps_high")
    for name in ("delta_low", "delta_high", "dual_clip"):
        assert signature_default(verl.tepo_overrides, name) == signature_default(tepo_loss, name), name


def test_the_trl_adapter_defaults_to_the_losss_clip_ranges():
    trl = pytest.importorskip("minitepo.integrations.trl")
    fields = {f.name: f.default for f in dataclasses.fields(trl.TEPOConfig)}
    assert fields["epsilon"] == signature_default(tepo_loss, "eps_low")
    assert fields["epsilon_high"] == signature_default(tepo_loss, "eps_high")
    assert fields["tepo_delta_low"] == signature_default(tepo_loss, "delta_low")
    assert fields["tepo_delta_high"] == signature_default(tepo_loss, "delta_high")


def test_the_adapters_default_mask_tol_to_tepo_mask_tol_as_the_trainer_does():
    verl = pytest.importorskip("minitepo.integrations.verl")
    trl = pytest.importorskip("minitepo.integrations.trl")
    assert verl.TEPOPolicyLossConfig().mask_tol == TEPO_MASK_TOL
    assert signature_default(verl.tepo_overrides, "mask_tol") == TEPO_MASK_TOL
    assert {f.name: f.default for f in dataclasses.fields(trl.TEPOConfig)}["tepo_mask_tol"] == TEPO_MASK_TOL


def test_the_rl_flags_defaults_are_the_core_trainers():
    flags = rl_flags()
    core = TrainerConfig()
    differ = {name: (getattr(flags, name), getattr(core, name)) for name in SHARED_FIELDS
              if getattr(flags, name) != getattr(core, name)}
    assert not differ, f"minitepo rl's defaults differ from TrainerConfig's: {differ}"
    assert {"lr", "min_lr_frac", "warmup", "temperature", "iterations"} <= set(SHARED_FIELDS)
    built = flags.trainer_config(make_task("add"))
    assert (built.lr, built.min_lr_frac) == (core.lr, core.min_lr_frac)


def test_the_learning_rate_schedule_has_no_default_floor_of_its_own():
    assert signature_default(lr_at, "min_lr_frac") is inspect.Parameter.empty
    core = TrainerConfig()
    assert lr_at(10 ** 6, lr=core.lr, warmup=core.warmup, total=10, min_lr_frac=core.min_lr_frac) == \
        core.lr * core.min_lr_frac


def test_the_presets_are_the_core_trainer_with_their_changes_and_reach_their_runs():
    core = TrainerConfig()
    for preset, changed in ((COMPARE, {"iterations", "lr", "min_lr_frac", "temperature", "scoring"}),
                            (QUICKSTART, {"lr", "min_lr_frac", "temperature", "iterations", "prompts", "group_size",
                                          "max_resample_rounds", "scoring"})):
        differ = {f.name for f in dataclasses.fields(TrainerConfig) if getattr(preset, f.name) != getattr(core, f.name)}
        assert differ == changed, differ
    compare = CompareConfig()
    run = compare.rl_config(parse_entry("tepo"), 0, "somewhere/checkpoint.pt", "3")
    for name in ("iterations", "lr", "min_lr_frac", "temperature", "prompts", "group_size", "minibatches", "epochs",
                 "scoring"):
        assert getattr(run, name) == getattr(COMPARE, name), name
    stage = rl_stage(QuickstartConfig(), "somewhere/checkpoint.pt")
    for name in ("lr", "min_lr_frac", "temperature", "prompts", "group_size", "minibatches", "iterations",
                 "max_resample_rounds", "scoring"):
        assert getattr(stage, name) == getattr(QUICKSTART, name), name
    assert (MaskTokensConfig().lr, MaskTokensConfig().temperature) == (COMPARE.lr, COMPARE.temperature)


def test_the_sft_flags_take_the_cores_supervised_defaults_and_each_warm_start_its_own_lr():
    core, flags = SupervisedConfig(), SFTConfig()
    for field in dataclasses.fields(SupervisedConfig):
        assert getattr(flags, field.name) == getattr(core, field.name), field.name
    # the quickstart's weak warm start has its own peak lr (research/quickstart-lift/README.md); compare's keeps the core's
    assert QuickstartConfig().sft_lr == WARM_START_RULES["quickstart"].lr
    assert WARM_START_RULES["compare"].lr == core.lr


def test_every_rl_flag_is_the_core_trainers_an_objectives_a_shapings_dapos_or_the_runs():
    dapo = {"overlong_shaping", "overlong_cache"}  # resolved by the lab
    groups = [set(SHARED_FIELDS), set(LOSS_PARAMS), set(SHAPING_PARAMS), dapo, set(RUN_FIELDS)]
    fields = {f.name for f in dataclasses.fields(RLConfig)}
    assert sum(len(g) for g in groups) == len(set().union(*groups)), "a field is in two groups"
    assert set().union(*groups) == fields, f"in no group: {fields - set().union(*groups)}; " \
                                           f"not a field: {set().union(*groups) - fields}"
    assert len(dataclasses.fields(TrainerConfig)) <= 23
