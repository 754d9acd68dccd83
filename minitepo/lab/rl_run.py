"""An RL run: the lab around the core's ``Trainer`` (``minitepo.rl``).

``RLRun`` loads the warm start, then runs ``Trainer.iterate`` in a loop that evaluates every ``eval_every``
iterations, logs one metrics record per iteration to ``OUT/metrics.jsonl``, checkpoints every ``save_every``
(atomic, with every RNG state: resuming reproduces an uninterrupted run exactly on CPU), stops at
``stop_at_accuracy`` / ``stop_at_reward``, and on Ctrl-C finishes the current iteration, writes a checkpoint
and exits.
"""

from __future__ import annotations

import collections
import dataclasses
import signal
import threading
from pathlib import Path

from tqdm import tqdm

from minitepo.device import pick_device
from minitepo.evaluate import greedy_accuracy, pass_at_k
from minitepo.lab.checkpoint import load_model, restore_run, save_run
from minitepo.lab.guards import check_resume, prepare_run_folder
from minitepo.lab.rl_config import RLConfig
from minitepo.lab.runs import MetricsLog, write_json
from minitepo.model import GPT
from minitepo.rl import Trainer, TrainingError
from minitepo.tokenizer import Tokenizer
from toy_tasks import resolve_task


class RLRun(Trainer):
    """The core's ``Trainer`` on a run folder: ``run`` is the outer loop (evaluation, logging, checkpoints,
    resume, stopping rules, Ctrl-C)."""

    def __init__(self, config: RLConfig, model: GPT | None = None, tokenizer: Tokenizer | None = None):
        if model is None:  # the warm start first: a missing or foreign checkpoint fails here, before any work
            model, tokenizer, init = load_model(config.init, pick_device(config.device))
            trained_name, trained_levels = init.get("task"), init.get("levels")
        else:  # an in-memory model (a notebook); its task must then be named in the config
            tokenizer, trained_name, trained_levels = tokenizer or Tokenizer(), None, None
        task = resolve_task(config.task, config.levels, trained_name=trained_name, trained_levels=trained_levels)
        super().__init__(config.trainer_config(task), model, tokenizer, task)
        self.run_config = config
        self.out = Path(config.out)
        self.stop_requested = False

    def iterate(self) -> dict:
        try:
            return super().iterate()
        except TrainingError as e:
            raise TrainingError(f"{e}; the checkpoint in {str(self.out)!r} is the last good one") from None

    def run(self) -> dict:
        c = self.run_config
        prepare_run_folder(self.out, resume=c.resume, overwrite=c.overwrite)  # never overwrites a run by accident
        if c.resume:
            self.restore()
        write_json(self.out / "config.json", {"kind": "rl", **dataclasses.asdict(c)})
        log = MetricsLog(self.out, resume=c.resume, keep_until_step=self.iteration)
        start_acc = None
        if self.iteration == 0 and not c.resume:  # (resumed from the step-0 checkpoint: step 0 is logged already)
            first = {"step": 0, **self.evaluate(), "time/train_s": 0.0, "charts/opt_steps": 0}
            log.log(first)
            self.save()
            start_acc = first["eval/greedy_acc/all"]
        last_eval: dict = {}
        recent = collections.deque(maxlen=c.reward_window)  # sampled rewards, for stop_at_reward
        bar = tqdm(total=c.iterations, initial=self.iteration, desc=c.algo, disable=not c.progress, dynamic_ncols=True)
        with FirstCtrlCStops(self):
            while self.iteration < c.iterations and not self.stop_requested:
                record = self.iterate()
                self.iteration += 1
                recent.append(record["charts/reward_mean"])
                rewarded = (c.stop_at_reward is not None and len(recent) == c.reward_window
                            and sum(recent) / len(recent) >= c.stop_at_reward)
                done = self.iteration == c.iterations or rewarded
                if self.iteration % c.eval_every == 0 or done:
                    last_eval = self.evaluate()
                    record.update(last_eval)
                log.log({"step": self.iteration, **record})
                bar.update(1)
                bar.set_postfix(reward=f"{record['charts/reward_mean']:.2f}",
                                acc=f"{last_eval.get('eval/greedy_acc/all', float('nan')):.2f}")
                if not c.progress and c.verbose and "eval/greedy_acc/all" in record:
                    print(f"{c.algo} iteration {self.iteration:4d}  reward {record['charts/reward_mean']:.3f}  "
                          f"held-out acc {record['eval/greedy_acc/all']:.3f}  ({self.t_train:.0f}s)", flush=True)
                reached = (c.stop_at_accuracy is not None and "eval/greedy_acc/all" in record
                           and record["eval/greedy_acc/all"] >= c.stop_at_accuracy)
                if self.iteration % c.save_every == 0 or done or self.stop_requested or reached:
                    self.save()
                if reached or rewarded:
                    break
        bar.close()
        return {"iterations": self.iteration, "seconds": self.t_train, "start_accuracy": start_acc,
                "final": last_eval, "interrupted": self.stop_requested, "checkpoint": str(self.out / "checkpoint.pt")}

    def evaluate(self) -> dict:
        """Greedy held-out accuracy per level, and sampled pass@k when ``pass_k`` > 0."""
        accuracy = greedy_accuracy(self.model, self.tokenizer, self.task, precision=self.precision)
        record = {f"eval/greedy_acc/{k}": v for k, v in accuracy.items()}
        if self.run_config.pass_k:
            record[f"eval/pass@{self.run_config.pass_k}"] = pass_at_k(
                self.model, self.tokenizer, self.task, k=self.run_config.pass_k, temperature=self.config.temperature,
                generator=self.generators["eval"], precision=self.precision)
        return record

    def save(self) -> None:
        save_run(self.out / "checkpoint.pt", kind="rl", step=self.iteration, model=self.model,
                 optimizer=self.optimizer, alphabet=self.tokenizer.alphabet, task=self.task, config=self.run_config,
                 generators=self.generators, python_rngs={"prompt_rng": self.prompt_rng},
                 opt_step=self.opt_step, t_train=self.t_train)

    def restore(self) -> None:
        path = self.out / "checkpoint.pt"
        data = restore_run(path, kind="rl", model=self.model, optimizer=self.optimizer,
                           alphabet=self.tokenizer.alphabet, generators=self.generators,
                           python_rngs={"prompt_rng": self.prompt_rng})
        check_resume(path, data["config"], self.run_config, resolved={  # the same run, only longer
            "task": (data.get("task"), self.task.name), "levels": (data.get("levels"), self.task.levels)})
        self.iteration, self.opt_step, self.t_train = int(data["step"]), int(data["opt_step"]), float(data["t_train"])


class FirstCtrlCStops:
    """While active, the first Ctrl-C asks the trainer to stop after the current iteration (and checkpoint);
    a second one aborts at once. Only in the main thread, where Python delivers signals."""

    def __init__(self, trainer: RLRun):
        self.trainer, self.previous = trainer, None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self.handle)
        return self

    def handle(self, signum, frame):
        if self.trainer.stop_requested:
            raise KeyboardInterrupt
        self.trainer.stop_requested = True
        print("\nCtrl-C: finishing this iteration, then writing a checkpoint (press again to abort)", flush=True)

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
        return False


def train_rl(config: RLConfig, model: GPT | None = None, tokenizer: Tokenizer | None = None) -> dict:
    """Run RL as ``config`` says, from its ``init`` checkpoint or from an in-memory ``model`` (then name the task
    in the config). The model is trained in place. Returns a summary with start and final held-out accuracy."""
    return RLRun(config, model, tokenizer).run()
