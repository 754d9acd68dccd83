"""The core's configs check their own values once, when they are made, with an error that names the field and what
is allowed; what ``minitepo rl`` trains is what ``Trainer(TrainerConfig())`` trains; objectives say what a trainer
needs to know about them in their registration."""

import pytest

from minitepo import SupervisedConfig, TrainerConfig
from minitepo.lab.rl_config import RLConfig
from minitepo.losses import OBJECTIVE_FACTS, OBJECTIVES
from toy_tasks import make_task


@pytest.mark.parametrize("values, words", [
    (dict(group_size=1), "group_size must be an integer >= 2"),
    (dict(temperature=0), "temperature must be a finite number > 0"),
    (dict(old_logp="oops"), "old_logp must be one of auto, sampler, recompute"),
    (dict(minibatches=0), "minibatches must be an integer >= 1"),
    (dict(prompts=2.5), "prompts must be an integer >= 1"),
    (dict(lr=float("nan")), "lr must be a finite number > 0"),
    (dict(min_lr_frac=1.5), "min_lr_frac must be a finite number in [0, 1]"),
    (dict(max_resample_rounds=-1), "max_resample_rounds must be an integer >= 0"),
    (dict(scoring="fast"), "scoring must be one of plain, shared_prompt"),
    (dict(dynamic_sampling="yes"), "dynamic_sampling must be None"),
    (dict(max_new_tokens=0), "max_new_tokens must be None or an integer >= 1"),
    (dict(algo="ppo"), "unknown objective 'ppo'"),
    (dict(objective={"delta_low": -1.0}), "delta_low"),
    (dict(objective={"mask_criterion": "sometimes"}), "TEPO mask criterion"),
    (dict(algo="grpo", objective={"agg": "mean"}), "aggregation mode"),
])
def test_a_bad_trainer_value_is_refused_when_the_config_is_made(values, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        TrainerConfig(**values)


@pytest.mark.parametrize("values, words", [
    (dict(steps=0), "steps must be an integer >= 1"),
    (dict(batch_size=-3), "batch_size must be an integer >= 1"),
    (dict(lr=0), "lr must be a finite number > 0"),
    (dict(precision="fp8"), "precision must be one of"),
])
def test_a_bad_supervised_value_is_refused_when_the_config_is_made(values, words):
    with pytest.raises(ValueError, match=words):
        SupervisedConfig(**values)


@pytest.mark.parametrize("algo", sorted(OBJECTIVES))
def test_the_core_and_minitepo_rl_train_the_same_recipe_for_every_objective(algo):
    core = TrainerConfig(algo=algo)
    lab = RLConfig(algo=algo).trainer_config(make_task("add"))
    assert core.uses_dynamic_sampling == lab.uses_dynamic_sampling == OBJECTIVE_FACTS[algo].dynamic_sampling
    assert core.max_resample_rounds == lab.max_resample_rounds and core.scoring == lab.scoring


def test_every_objective_files_its_facts_with_itself():
    assert set(OBJECTIVE_FACTS) == set(OBJECTIVES)
    assert {name for name, f in OBJECTIVE_FACTS.items() if f.dynamic_sampling} == {"dapo", "gtpo", "grpo_s", "tepo"}
    assert {name: f.advantages for name, f in OBJECTIVE_FACTS.items() if f.advantages != "z-score"} == \
        {"dr_grpo": "mean-only", "gtpo": "gtpo", "grpo_s": "grpo_s"}
    assert [name for name, f in OBJECTIVE_FACTS.items() if f.clips_sequences] == ["gspo"]
