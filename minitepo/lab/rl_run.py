"""An RL run: the lab around the core's ``Trainer`` (``minitepo.rl``).

``RLRun`` holds a ``Trainer`` (``make_trainer`` builds it from an ``RLConfig``: the warm start, the task) and runs
the core's loop as the lab wants it: ``Trainer.iterate``, held-out evaluation every ``eval_every`` iterations (plus
sampled pass@k), one metrics record per iteration in ``OUT/metrics.jsonl``, a checkpoint every ``save_every``
(atomic, with every RNG state: resuming reproduces an uninterrupted run exactly on CPU), the stopping rules
``stop_at_accuracy`` / ``stop_at_reward``, a progress bar, and on Ctrl-C the current iteration finished, a
checkpoint written and an exit.
"""

from __future__ import annotations

import collections
import dataclasses
import signal
import threading
from pathlib import Path

from tqdm import tqdm

from minitepo.device import make_generator, pick_device
from minitepo.evaluate import pass_at_k
from minitepo.lab.checkpoint import load_model, restore_run, save_run
from minitepo.lab.guards import check_resume, prepare_run_folder
from minitepo.lab.rl_config import RLConfig
from minitepo.lab.runs import MetricsLog, write_json
from minitepo.model import GPT
from minitepo.rl import Trainer, TrainingError
from minitepo.tokenizer import Tokenizer
from toy_tasks import resolve_task


def make_trainer(config: RLConfig, model: GPT | None = None, tokenizer: Tokenizer | None = None) -> Trainer:
    """The core's ``Trainer`` for ``config``: on its warm start (``init``), or on an in-memory ``model`` (whose task
    the config must then name), moved to the config's device, on the task the warm start was trained on unless the
    config names another."""
    device = pick_device(config.device)
    if model is None:  # the warm start first: a missing or foreign checkpoint fails here, before any work
        model, tokenizer, init = load_model(config.init, device)
        trained_name, trained_levels = init.get("task"), init.get("levels")
    else:  # an in-memory model (a notebook); its task must then be named in the config
        tokenizer, trained_name, trained_levels = tokenizer or Tokenizer(), None, None
    task = resolve_task(config.task, config.levels, trained_name=trained_name, trained_levels=trained_levels)
    return Trainer(config.trainer_config(task), model.to(device), tokenizer, task)


class RLRun:
    """An RL run on a run folder: a core ``Trainer``, and ``run``, the loop around its iterations (evaluation,
    logging, checkpoints, resume, stopping rules, Ctrl-C)."""

    def __init__(self, config: RLConfig, model: GPT | None = None, tokenizer: Tokenizer | None = None):
        self.config = config
        self.trainer = make_trainer(config, model, tokenizer)
        self.out = Path(config.out)
        self.eval_generator = make_generator(self.trainer.device, config.seed + 2)  # pass@k's sampling
        self.t_train = 0.0  # seconds spent in iterations (evaluation excluded), carried across resumes
        self.stop_requested = False

    def iterate(self) -> dict:
        """One iteration of the trainer, timed into ``time/train_s``; a failure names the last good checkpoint."""
        try:
            record = self.trainer.iterate()
        except TrainingError as e:
            raise TrainingError(f"{e}; the checkpoint in {str(self.out)!r} is the last good one") from None
        self.t_train += record["time/step_s"]
        return {**record, "time/train_s": self.t_train}

    def run(self) -> dict:
        c, trainer = self.config, self.trainer
        prepare_run_folder(self.out, resume=c.resume, overwrite=c.overwrite)  # never overwrites a run by accident
        if c.resume:
            self.restore()
        write_json(self.out / "config.json", {"kind": "rl", **dataclasses.asdict(c)})
        log = MetricsLog(self.out, resume=c.resume, keep_until_step=trainer.iteration)
        start_acc = None
        if trainer.iteration == 0 and not c.resume:  # (resumed from the step-0 checkpoint: step 0 is logged already)
            first = {"step": 0, **self.evaluate(), "time/train_s": 0.0, "charts/opt_steps": 0}
            log.log(first)
            self.save()
            start_acc = first["eval/greedy_acc/all"]
        last_eval: dict = {}
        recent = collections.deque(maxlen=c.reward_window)  # sampled rewards, for stop_at_reward
        bar = tqdm(total=c.iterations, initial=trainer.iteration, desc=c.algo, disable=not c.progress,
                   dynamic_ncols=True)
        with FirstCtrlCStops(self):
            while trainer.iteration < c.iterations and not self.stop_requested:
                record = self.iterate()
                recent.append(record["charts/reward_mean"])
                rewarded = (c.stop_at_reward is not None and len(recent) == c.reward_window
                            and sum(recent) / len(recent) >= c.stop_at_reward)
                done = trainer.iteration == c.iterations or rewarded
                if trainer.iteration % c.eval_every == 0 or done:
                    last_eval = self.evaluate()
                    record.update(last_eval)
                log.log({"step": trainer.iteration, **record})
                bar.update(1)
                bar.set_postfix(reward=f"{record['charts/reward_mean']:.2f}",
                                acc=f"{last_eval.get('eval/greedy_acc/all', float('nan')):.2f}")
                if not c.progress and c.verbose and "eval/greedy_acc/all" in record:
                    print(f"{c.algo} iteration {trainer.iteration:4d}  reward {record['charts/reward_mean']:.3f}  "
                          f"held-out acc {record['eval/greedy_acc/all']:.3f}  ({self.t_train:.0f}s)", flush=True)
                reached = (c.stop_at_accuracy is not None and "eval/greedy_acc/all" in record
                           and record["eval/greedy_acc/all"] >= c.stop_at_accuracy)
                if trainer.iteration % c.save_every == 0 or done or self.stop_requested or reached:
                    self.save()
                if reached or rewarded:
                    break
        bar.close()
        return {"iterations": trainer.iteration, "seconds": self.t_train, "start_accuracy": start_acc,
                "final": last_eval, "interrupted": self.stop_requested, "checkpoint": str(self.out / "checkpoint.pt")}

    def evaluate(self) -> dict:
        """The trainer's greedy held-out accuracy per level, and sampled pass@k when ``pass_k`` > 0."""
        record = self.trainer.evaluate()
        if self.config.pass_k:
            t = self.trainer
            record[f"eval/pass@{self.config.pass_k}"] = pass_at_k(
                t.model, t.tokenizer, t.task, k=self.config.pass_k, temperature=t.config.temperature,
                generator=self.eval_generator, precision=t.precision)
        return record

    def generators(self) -> dict:
        """Every torch RNG of the run, by the name its checkpoint stores it under."""
        return {**self.trainer.generators, "eval": self.eval_generator}

    def save(self) -> None:
        t = self.trainer
        save_run(self.out / "checkpoint.pt", kind="rl", step=t.iteration, model=t.model, optimizer=t.optimizer,
                 alphabet=t.tokenizer.alphabet, task=t.task, config=self.config, generators=self.generators(),
                 python_rngs={"prompt_rng": t.prompt_rng}, opt_step=t.opt_step, t_train=self.t_train)

    def restore(self) -> None:
        t, path = self.trainer, self.out / "checkpoint.pt"
        data = restore_run(path, kind="rl", model=t.model, optimizer=t.optimizer, alphabet=t.tokenizer.alphabet,
                           generators=self.generators(), python_rngs={"prompt_rng": t.prompt_rng})
        check_resume(path, data["config"], self.config, resolved={  # the same run, only longer
            "task": (data.get("task"), t.task.name), "levels": (data.get("levels"), t.task.levels)})
        t.iteration, t.opt_step, self.t_train = int(data["step"]), int(data["opt_step"]), float(data["t_train"])


class FirstCtrlCStops:
    """While active, the first Ctrl-C asks the run to stop after the current iteration (and checkpoint);
    a second one aborts at once. Only in the main thread, where Python delivers signals."""

    def __init__(self, run: RLRun):
        self.run, self.previous = run, None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self.handle)
        return self

    def handle(self, signum, frame):
        if self.run.stop_requested:
            raise KeyboardInterrupt
        self.run.stop_requested = True
        print("\nCtrl-C: finishing this iteration, then writing a checkpoint (press again to abort)", flush=True)

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        return False


def train_rl(config: RLConfig, model: GPT | None = None, tokenizer: Tokenizer | None = None) -> dict:
    """Run RL as ``config`` says, from its ``init`` checkpoint or from an in-memory ``model`` (then name the task
    in the config). The model is trained in place. Returns a summary with start and final held-out accuracy."""
    return RLRun(config, model, tokenizer).run()
