"""A supervised warm start run: the lab's loop around the core's supervised steps (``minitepo.sft.steps``).

Why a warm start, what one step does, and the plain loop: ``minitepo.sft``. This run trains as that loop does
(a test checks it) and adds a fresh model built from the config, run folders, checkpoints, resume, a progress bar
and the weak warm start's stopping rule (``settle_at``), which changes the schedule mid-run.

The loop: sample a batch of training examples -> cross-entropy -> AdamW with warmup and cosine
decay -> every ``eval_every`` steps, greedy accuracy on the held-out set per level -> checkpoint.
"""

from __future__ import annotations

import dataclasses
import random
import time
from dataclasses import dataclass
from typing import ClassVar

import torch
from tqdm import tqdm

from minitepo.device import PRECISIONS, pick_device, resolve_precision
from minitepo.evaluate import greedy_accuracy
from minitepo.lab.checkpoint import (CheckpointError, load_checkpoint, load_model, python_rng_state, save_run,
                                     set_rng_state)
from minitepo.lab.guards import (check_device, check_field_choice, check_int, check_number, check_resume,
                                 check_resume_or_overwrite, prepare_run_folder, refuse)
from minitepo.lab.runs import MetricsLog, write_json
from minitepo.model import GPT, ModelConfig
from minitepo.optim import TrainingError, lr_at, make_optimizer
from minitepo.sft import IGNORE, SupervisedConfig, make_batch, steps
from minitepo.tokenizer import Tokenizer
from toy_tasks import make_task, parse_levels


SUPERVISED = SupervisedConfig()
"""The core's defaults, which ``minitepo sft``'s flags share (each with its reason, in ``minitepo.sft``)."""


@dataclass
class SFTConfig:
    """Supervised warm start on a toy task's reference answers."""

    RESUMABLE: ClassVar[tuple[str, ...]] = ("steps", "resume", "overwrite", "progress", "verbose", "device", "out")
    # what --resume may change: the run's length, and where and how it is shown (not what it computes)

    task: str = "add"
    """Toy task to train on (see ``minitepo tasks``)."""
    levels: str | None = None
    """Difficulty levels to train and evaluate on, comma-separated (e.g. "3" or "1,2,3"); default: the task's own."""
    steps: int = SUPERVISED.steps
    """Optimizer steps; the cosine schedule decays over exactly this many."""
    batch_size: int = SUPERVISED.batch_size
    """Examples per optimizer step."""
    lr: float = SUPERVISED.lr
    """Peak learning rate (> 0); the default's reason is at ``SupervisedConfig.lr``."""
    warmup: int = SUPERVISED.warmup
    """Linear warmup steps."""
    min_lr_frac: float = SUPERVISED.min_lr_frac
    """The cosine decays to this fraction of ``lr``."""
    weight_decay: float = SUPERVISED.weight_decay
    """AdamW weight decay on weight matrices."""
    grad_clip: float = SUPERVISED.grad_clip
    """Clip the global gradient norm to this (0 disables)."""
    eval_every: int = 100
    """Evaluate held-out greedy accuracy every this many steps (and at the end)."""
    settle_at: float | None = None
    """Early stop for a *weak* warm start: when held-out accuracy (``settle_metric``, checked every
    ``settle_check_every`` steps) first reaches this, decay the
    learning rate linearly to 0 over ``settle_steps`` more steps and stop there (``settle_steps=0``: stop at once,
    the checkpoint is the model whose check reached it). None: run all steps."""
    settle_metric: str = "all"
    """Accuracy that triggers ``settle_at``: "all" or a level such as "level/3"."""
    settle_steps: int = 100
    """Length of the settling decay after ``settle_at`` triggers (>= 0; 0: none, the accuracy at the stop is then
    the trigger's, where a decay keeps learning and can overshoot)."""
    settle_check_every: int = 5
    """How often (in steps) the ``settle_at`` trigger is checked, on the held-out prompts of ``settle_metric`` only.
    Accuracy can jump by tens of points within a few steps when the model "gets" a task, so the check is frequent."""
    settle_check_near: float = 0.0
    """Once a settle check reaches this fraction of ``settle_at``, check after every step, so the trigger fires
    within one step of the crossing (e.g. 0.5; 0: never, keep checking every ``settle_check_every`` steps)."""
    settle_cap: float | None = None
    """Upper bound for a *weak* warm start (an accuracy >= settle_at): if the check that reaches ``settle_at`` reads
    above this, one step overshot it, and the weights of the last check below ``settle_at`` (kept in memory) are
    restored before settling. None: no bound."""
    n_layer: int = 4
    """Transformer blocks."""
    n_head: int = 4
    """Attention heads; must divide ``n_embd`` into heads of even size (rotary embeddings)."""
    n_embd: int = 128
    """Model width."""
    seed: int = SUPERVISED.seed
    """Seed for weights, data order and everything else (>= 0). Seeds differ a lot on add (research/warm-start/README.md)."""
    device: str = "auto"
    """auto, cpu, cuda or mps."""
    precision: str = SUPERVISED.precision
    """fp32, or bf16 (autocast, on CUDA or CPU); auto: bf16 on CUDA, fp32 elsewhere."""
    out: str = "runs/sft"
    """Run folder: config.json, metrics.jsonl, checkpoint.pt."""
    resume: bool = False
    """Continue from ``out``/checkpoint.pt instead of starting fresh. Its settings must stay the run's; only
    ``steps`` may change (on the command line, flags left out are taken from the run)."""
    overwrite: bool = False
    """Delete the run already in ``out`` and start afresh (without it, an existing run there is an error)."""
    progress: bool = True
    """Show a progress bar with live loss and accuracy."""
    verbose: bool = True
    """With the progress bar off, print a line at each evaluation; False prints nothing (notebooks, lessons)."""

    def __post_init__(self):
        """Every value is checked here, before any file is touched: library callers get the command line's checks."""
        task = make_task(self.task, levels=parse_levels(self.levels))  # an unknown task or level fails here
        for name in ("steps", "batch_size", "eval_every", "n_layer", "n_head", "n_embd", "settle_check_every"):
            check_int(self, name, 1)
        check_int(self, "settle_steps", 0, "0 stops at the trigger")
        if self.n_embd % self.n_head or (self.n_embd // self.n_head) % 2:
            raise ValueError(f"--n-embd {self.n_embd} must split into --n-head {self.n_head} heads of even size "
                             f"(rotary embeddings rotate pairs of dimensions)")
        check_number(self, "lr", 0, low_open=True)
        check_int(self, "warmup", 0)
        check_number(self, "min_lr_frac", 0, 1)
        check_number(self, "weight_decay", 0)
        check_number(self, "grad_clip", 0, why="0 disables clipping; a negative norm would flip the update")
        check_number(self, "settle_at", 0, 1, low_open=True, optional=True, why="an accuracy")
        check_number(self, "settle_check_near", 0, 1, why="a fraction of settle_at; 0 switches it off")
        check_number(self, "settle_cap", 0, 1, optional=True, why="an accuracy")
        if self.settle_cap is not None and (self.settle_at is None or self.settle_cap < self.settle_at):
            refuse("settle_cap", self.settle_cap, f"None, or an accuracy at or above settle_at (here {self.settle_at})")
        metrics = ["all"] + [f"level/{level}" for level in task.levels]
        check_field_choice(self, "settle_metric", metrics)
        check_int(self, "seed", 0)
        check_device(self)
        check_field_choice(self, "precision", PRECISIONS)
        check_resume_or_overwrite(self.resume, self.overwrite)


SURE_MARGIN = 1e-3
"""How far apart two logits must be for ``settle_accuracy`` to trust their order. A teacher-forced pass and the
sampler's KV-cached decoding (left-padded, one token at a time) compute the same float32 logits up to 4.4e-4 apart
on the quickstart's warm starts (measured by experiments/settle_check_cost.py at f38078c: research/quickstart-lift/);
1e-3 is 2.3x that."""


@torch.no_grad()
def settle_accuracy(model: GPT, tokenizer: Tokenizer, task, examples, precision: str) -> float:
    """Greedy accuracy on ``examples`` for the ``settle_at`` check: ``greedy_accuracy``'s number, read from one
    teacher-forced pass where that is sure, which costs about a third of decoding (the check runs after every step
    near the trigger: a third of a slow warm start's time went to it, research/quickstart-lift/README.md).

    Why it is the same number: where the only right response is the reference (``task.exact_reference``),
    greedy decoding is right iff at every answer position, fed the reference so far, the reference token has the
    highest logit. Teacher forcing computes those logits in one pass. Decoding computes the same ones (from the
    same prefixes, in another order, rounding differently), so the two agree on every position whose best and
    second-best logit are more than ``SURE_MARGIN`` apart, up to the first position the reference loses. If any
    example is not sure (a near-tie: about 3 checks in 10), or the task has other right answers, or the model runs
    in bf16, this decodes, as before."""
    right = None
    max_len = max(len(e.answer) for e in examples) + 1   # answer digits and EOS
    if task.exact_reference and precision == "fp32" and max_len <= task.max_new_tokens:
        was_training = model.training
        model.eval()
        x, y = make_batch(examples, tokenizer, next(model.parameters()).device)   # (B, L) each, IGNORE off the answer
        logits = model(x).float()                                                  # (B, L, V)
        model.train(was_training)
        answer = y != IGNORE                                                       # (B, L)
        gold = y.clamp(min=0)[..., None]                                           # (B, L, 1)
        margin = logits.gather(-1, gold).squeeze(-1) - logits.scatter(-1, gold, float("-inf")).amax(-1)   # (B, L)
        right = greedy_verdicts(margin, answer)
    if right is None:
        return greedy_accuracy(model, tokenizer, task, examples=examples, precision=precision)["all"]
    return int(right.sum()) / len(examples)   # as greedy_accuracy counts: right answers / prompts


def greedy_verdicts(margin: torch.Tensor, answer: torch.Tensor) -> torch.Tensor | None:
    """Whether greedy decoding gives each reference, from the teacher-forced ``margin`` (B, L) of the reference
    token's logit over the best other one at the ``answer`` positions (B, L) bool: right iff no answer position
    has a negative margin. None if a position greedy reaches (up to and including its first departure from the
    reference) is within ``SURE_MARGIN`` of a tie.   (B,) bool or None"""
    lost = answer & (margin < 0)                           # (B, L) the reference token is not greedy's choice
    reached = lost.cumsum(-1) - lost.long() == 0           # (B, L) no departure before: greedy gets here on the reference
    if (answer & reached & (margin.abs() <= SURE_MARGIN)).any():
        return None
    return ~lost.any(-1)


def train_sft(config: SFTConfig, model: GPT | None = None, tokenizer: Tokenizer | None = None, *, task=None,
              on_settle_check=None) -> dict:
    """Run supervised training; returns a summary with the final held-out accuracy.

    By default a fresh model is built from the config's ``n_layer``/``n_head``/``n_embd`` (seeded); pass an
    in-memory ``model`` (and its ``tokenizer``) to train that one in place instead, e.g. from a notebook.
    For studies of the recipe (research/warm-start/warmstart_study.py): ``task`` trains on that task object instead of
    the config's (a variant of it, e.g. with other options), and ``on_settle_check(step, accuracy)`` is called
    with the accuracy of every ``settle_at`` check."""
    device = pick_device(config.device)
    precision = resolve_precision(device, config.precision)
    task = task or make_task(config.task, levels=parse_levels(config.levels))
    settle_examples = [e for e in task.eval_set() if config.settle_metric in ("all", f"level/{e.level}")]
    out = prepare_run_folder(config.out, resume=config.resume, overwrite=config.overwrite)
    tokenizer = tokenizer or Tokenizer()
    start_step = 0
    if config.resume:
        loaded, tokenizer, ckpt = load_model(out / "checkpoint.pt", device)
        if ckpt.get("kind") != "sft":
            raise CheckpointError(f"{str(out / 'checkpoint.pt')!r} is a {ckpt.get('kind')!r} checkpoint, not an "
                                  f"'sft' one; cannot resume supervised training from it")
        check_resume(out / "checkpoint.pt", ckpt.get("config", {}), config,
                     resolved={"task": (ckpt.get("task"), task.name), "levels": (ckpt.get("levels"), task.levels)})
        if model is None:
            model = loaded
        else:  # keep training the caller's model, from the checkpoint's weights
            model.to(device).load_state_dict(loaded.state_dict())
        start_step = int(ckpt["step"])
    elif model is None:
        torch.manual_seed(config.seed)
        model = GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=config.n_layer,
                                n_head=config.n_head, n_embd=config.n_embd)).to(device)
    else:
        torch.manual_seed(config.seed)  # the data order and sampling are seeded as for a fresh model
        model = model.to(device)
    optimizer = make_optimizer(model, config.lr, config.weight_decay)
    rng = random.Random(config.seed)
    if config.resume:
        optimizer.load_state_dict(ckpt["optimizer"])
        set_rng_state(ckpt["rng"])
        rng.setstate(python_rng_state(ckpt["data_rng"]))
    write_json(out / "config.json", {"kind": "sft", **dataclasses.asdict(config)})
    log = MetricsLog(out, resume=config.resume, keep_until_step=start_step)

    def kept() -> str:
        """What a stopped run leaves on disk."""
        saved = load_checkpoint(out / "checkpoint.pt")["step"] if (out / "checkpoint.pt").is_file() else None
        return ("no checkpoint was written yet" if saved is None
                else f"{str(out / 'checkpoint.pt')!r} (step {saved}) is the last good checkpoint")

    def checkpoint(step: int, accuracy: dict) -> None:
        save_run(out / "checkpoint.pt", kind="sft", step=step, model=model, optimizer=optimizer,
                 alphabet=tokenizer.alphabet, task=task, config=config, python_rngs={"data_rng": rng},
                 accuracy=accuracy, settle_from=settle_from)

    t0 = time.perf_counter()
    tokens_seen = 0
    accuracy: dict = {}
    history: list[dict] = []
    bar = tqdm(total=config.steps, initial=start_step, desc="sft", disable=not config.progress, dynamic_ncols=True)
    done = start_step
    settle_from = ckpt.get("settle_from") if config.resume else None  # (step, lr) where settling began
    near = False  # a settle check has come within settle_check_near of settle_at: check after every step
    below = None  # (step, weights) of the last settle check below settle_at, while a settle_cap may need them

    def schedule(step: int) -> float | None:
        """The core's warmup and cosine until settle_at triggers; then a linear decay from the lr at the trigger
        to 0 over settle_steps, and None (stop) after it."""
        if settle_from is None:
            return lr_at(step, lr=config.lr, warmup=config.warmup, total=config.steps, min_lr_frac=config.min_lr_frac)
        begun, lr0 = settle_from
        if step >= begun + config.settle_steps:
            return None
        return lr0 * max(0.0, 1.0 - (step - begun) / config.settle_steps)

    try:
        for record, x in steps(model, tokenizer, task, config, optimizer=optimizer, rng=rng, precision=precision,
                               start=start_step, schedule=schedule):
            done, lr, loss = record["step"], record["charts/lr"], record["losses/sft"]
            bar.update(1)
            tokens_seen += int((x != tokenizer.pad_id).sum())  # tokens the model processed
            if config.settle_at is not None and settle_from is None and (near or done % config.settle_check_every == 0):
                trigger = settle_accuracy(model, tokenizer, task, settle_examples, precision)
                if on_settle_check is not None:
                    on_settle_check(done, trigger)
                near = config.settle_check_near > 0 and trigger >= config.settle_check_near * config.settle_at
                if trigger < config.settle_at and config.settle_cap is not None:
                    below = (done, {k: v.detach().clone() for k, v in model.state_dict().items()})
                if trigger >= config.settle_at:
                    settle_from = (done, lr)
                    record["charts/settle_trigger_acc"] = trigger
                    if not config.progress and config.verbose:
                        then = (f"settling: the learning rate decays to 0 over {config.settle_steps} steps"
                                if config.settle_steps else "stopping here")
                        print(f"sft step {done:5d}: {config.settle_metric} accuracy {trigger:.3f} >= "
                              f"{config.settle_at}; {then}", flush=True)
                    if config.settle_cap is not None and trigger > config.settle_cap and below is not None:
                        model.load_state_dict(below[1])  # the overshooting step is undone: the last check below
                        record["charts/settle_restored_step"] = below[0]
                        if not config.progress and config.verbose:
                            print(f"sft step {done:5d}: {config.settle_metric} accuracy {trigger:.3f} > settle_cap "
                                  f"{config.settle_cap}; restored the weights of step {below[0]}", flush=True)
                    below = None
            settling_done = settle_from is not None and done >= settle_from[0] + config.settle_steps
            if done % config.eval_every == 0 or done == config.steps or settling_done:
                accuracy = greedy_accuracy(model, tokenizer, task, precision=precision)
                elapsed = time.perf_counter() - t0
                record.update({f"eval/greedy_acc/{k}": v for k, v in accuracy.items()})
                record.update({"charts/seconds": elapsed, "charts/tokens_per_s": tokens_seen / elapsed})
                history.append({"step": done, "seconds": elapsed, "lr": lr, **accuracy})
                bar.set_postfix(loss=f"{loss:.3f}", acc=f"{accuracy['all']:.3f}")
                if not config.progress and config.verbose:
                    print(f"sft step {done:5d}  loss {loss:.4f}  held-out acc {accuracy['all']:.3f}  "
                          f"({elapsed:.0f}s)", flush=True)
                log.log(record)
                checkpoint(done, accuracy)
                if settling_done:
                    break
            elif done % 10 == 0 or "charts/settle_trigger_acc" in record:
                log.log(record)
    except TrainingError as e:
        raise TrainingError(f"sft step {done + 1}: {e}; {kept()}") from None
    bar.close()
    seconds = time.perf_counter() - t0
    return {"steps": done, "seconds": seconds, "accuracy": accuracy, "history": history,
            "settled": settle_from is not None, "checkpoint": str(out / "checkpoint.pt")}
