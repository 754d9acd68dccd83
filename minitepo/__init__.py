"""minitepo: a small, readable reference implementation of TEPO and the GRPO family of
reinforcement-learning objectives for language models, with a tiny transformer, a batched
sampler and arithmetic toy tasks to train on.

The names below are the lesson-facing API: lessons and notebooks import only from here, and these
names keep their meaning. One RL step by hand::

    from minitepo import GPT, ModelConfig, Tokenizer, make_task, collect_rollout, group_advantages, tepo_loss
    ...

(the whole snippet is in the README, section "One RL step by hand", and a test runs it). The loops::

    from minitepo import SupervisedConfig, Trainer, TrainerConfig, train_supervised
    train_supervised(model, tokenizer, task, SupervisedConfig(steps=300), eval_every=100)      # the warm start
    history = Trainer(TrainerConfig(iterations=20, temperature=0.7), model, tokenizer, task).train(eval_every=10)

This is the core only: ``import minitepo`` loads no module of the lab (``minitepo.lab``: run folders,
checkpoints, flags, comparisons, plots), nor matplotlib or tqdm; a test checks it in a fresh process. The lab's
names are imported from the lab: ``from minitepo.lab import SFTConfig, train_sft, RLConfig, train_rl, plot_runs``.
"""

from minitepo.advantages import group_advantages
from minitepo.losses import (OBJECTIVES, TEPO_MASK_TOL, aggregate, dapo_loss, grpo_loss, step_normalizer, tepo_loss,
                             tepo_mask)
from minitepo.model import GPT, ModelConfig
from minitepo.rl import Trainer, TrainerConfig
from minitepo.rollout import Rollout, SamplerConfig, collect_rollout, sample, score_rollout
from minitepo.sft import SupervisedConfig, train_supervised
from minitepo.tokenizer import Tokenizer
from toy_tasks import make_task

__version__ = "0.1.0"

__all__ = [
    "Tokenizer", "GPT", "ModelConfig", "make_task",
    "sample", "SamplerConfig", "Rollout", "score_rollout", "collect_rollout",
    "group_advantages", "OBJECTIVES", "grpo_loss", "dapo_loss", "tepo_loss", "aggregate", "step_normalizer",
    "tepo_mask", "TEPO_MASK_TOL",
    "Trainer", "TrainerConfig", "SupervisedConfig", "train_supervised",
]
