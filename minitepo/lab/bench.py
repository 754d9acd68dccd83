"""Speed benchmark: every number is measured in this run, side by side, so ratios are meaningful
even on a busy shared machine (absolute numbers are not).

    python -m minitepo.lab.bench          (or: minitepo bench)

Rows:
* sampler completions/s with and without the KV cache (batch 256, 12 new tokens) and their ratio;
* supervised training tokens/s on 3-digit ``add`` and the achieved model FLOP/s;
* the machine's measured fp32 matmul FLOP/s (a large square matmul), as the ceiling to compare with;
* one RL step of 32 prompts x 8 responses, 8 new tokens: seconds split into sampling, extra
  forward passes (the frozen reference model, only when beta > 0) and the update, with the
  FLOP/s it achieves counted as plain full passes over every row. The sampler and the loss read each
  prompt once per group instead (``shared_prompt.response_logits``), so they compute fewer FLOPs than
  counted: compare steps by seconds, not by that fraction.

Model FLOPs are counted analytically: 2 FLOPs per multiply-add in every matmul of the forward
pass (weights, attention scores and values, logits), and 3x that for forward + backward.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from minitepo.device import pick_device, set_cpu_threads
from minitepo.lab.checkpoint import save_checkpoint
from minitepo.lab.config import add_flags, from_args
from minitepo.lab.guards import check_device, check_int
from minitepo.lab.rl_config import RLConfig
from minitepo.lab.rl_run import make_trainer
from minitepo.model import GPT, ModelConfig
from minitepo.optim import make_optimizer
from minitepo.rollout import SamplerConfig, encode_prompts, sample
from minitepo.sft import IGNORE, make_batch
from minitepo.tokenizer import Tokenizer
from toy_tasks import make_task


@dataclass
class BenchConfig:
    """What the benchmark measures."""

    batch: int = 256
    """Sampler batch (completions per call)."""
    new_tokens: int = 12
    """Tokens generated per completion in the sampler rows (EOS is disabled so every row runs to the end)."""
    repeats: int = 3
    """Timed repetitions per row; the fastest is reported (least disturbed by other processes)."""
    sft_steps: int = 30
    """Supervised steps timed for tokens/s."""
    rl_steps: int = 4
    """RL steps timed (after one warm-up step)."""
    device: str = "auto"
    """auto, cpu, cuda or mps."""

    def __post_init__(self):
        for name in ("batch", "new_tokens", "repeats", "sft_steps", "rl_steps"):
            check_int(self, name, 1)
        check_device(self)


def forward_flops(config, seq_len: int, n_tokens: int | None = None) -> float:
    """FLOPs of one forward pass over a sequence of ``seq_len`` tokens (or ``n_tokens`` of them
    attending to ``seq_len`` keys on average)."""
    n_tokens = seq_len if n_tokens is None else n_tokens
    d, L, V = config.n_embd, config.n_layer, config.vocab_size
    weights = L * (3 * d * d + d * d + 8 * d * d)  # qkv, proj, mlp (4d up and down)
    attention = L * 2 * d * seq_len  # q.k scores and the weighted sum of values, per query
    return 2.0 * n_tokens * (weights + attention + d * V)


def best_time(fn, repeats: int) -> float:
    """Fastest of ``repeats`` timed calls of ``fn`` (after one untimed warm-up call)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        _sync()
        times.append(time.perf_counter() - t0)
    return min(times)


def _sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def matmul_flops(device, n: int = 1024, repeats: int = 5) -> float:
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    t = best_time(lambda: a @ b, repeats)
    return 2.0 * n ** 3 / t


def bench_sampler(model, tokenizer, cfg: BenchConfig) -> dict:
    prompts = encode_prompts(tokenizer, ["123+456="] * cfg.batch)
    gen = torch.Generator(device=model.wte.weight.device)
    result = {}
    for use_cache in (True, False):
        sc = SamplerConfig(max_new_tokens=cfg.new_tokens, use_cache=use_cache)
        # eos_id=-1 never matches, so every completion has exactly new_tokens tokens
        t = best_time(lambda: sample(model, prompts, group_size=1, eos_id=-1, pad_id=tokenizer.pad_id,
                                     config=sc, generator=gen.manual_seed(0)), cfg.repeats)
        result["cached" if use_cache else "recompute"] = cfg.batch / t
    return result


def bench_sft(model, tokenizer, cfg: BenchConfig, device) -> dict:
    task = make_task("add", levels=(3,))
    rng = random.Random(0)
    batches = [make_batch([task.sample(rng) for _ in range(64)], tokenizer, device) for _ in range(cfg.sft_steps + 1)]
    opt = make_optimizer(model, 1e-4, 0.0)

    def step(x, y):
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten(), ignore_index=IGNORE)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    step(*batches[0])  # warm-up
    _sync()
    t0 = time.perf_counter()
    for x, y in batches[1:]:
        step(x, y)
    _sync()
    seconds = time.perf_counter() - t0
    tokens = sum(int((x != tokenizer.pad_id).sum()) for x, _ in batches[1:])
    flops = sum(3 * forward_flops(model.config, x.size(1)) * x.size(0) for x, _ in batches[1:])  # fwd + bwd per row
    return {"tokens_per_s": tokens / seconds, "flops_per_s": flops / seconds}


def bench_rl(init: Path, algo: str, cfg: BenchConfig, out: Path, scoring: str = "plain") -> dict:
    rl = RLConfig(init=str(init), algo=algo, task="add", levels="3", prompts=32, group_size=8, minibatches=4,
                  max_new_tokens=8, device=cfg.device, out=str(out), progress=False, scoring=scoring,
                  dynamic_sampling=False)  # the cost of one step on all 256 rows (an untrained model has no mixed group)
    trainer = make_trainer(rl)
    trainer.iterate()  # warm-up
    records = [trainer.iterate() for _ in range(cfg.rl_steps)]
    mean = lambda k: sum(r[k] for r in records) / len(records)  # noqa: E731
    return {"step_s": mean("time/step_s"), "sample_s": mean("time/sample_s"), "update_s": mean("time/update_s"),
            "extra_forward_s": mean("time/ref_forward_s")}


def run(cfg: BenchConfig) -> dict:
    device = pick_device(cfg.device)
    tokenizer = Tokenizer()
    torch.manual_seed(0)
    model = GPT(ModelConfig(vocab_size=tokenizer.vocab_size)).to(device)
    n_params = model.num_params()
    print(f"minitepo bench on {device} ({torch.get_num_threads()} threads), model {model.config.n_layer} layers, "
          f"d={model.config.n_embd}, {n_params / 1e6:.2f}M parameters", flush=True)

    peak = matmul_flops(device)
    print(f"matmul (1024x1024 fp32)        {peak / 1e9:8.1f} GFLOP/s  (the machine's measured ceiling)", flush=True)

    model.eval()
    s = bench_sampler(model, tokenizer, cfg)
    print(f"sampler, KV cache              {s['cached']:8.0f} completions/s  (batch {cfg.batch}, {cfg.new_tokens} new tokens)")
    print(f"sampler, recompute prefix      {s['recompute']:8.0f} completions/s")
    print(f"KV cache speed-up              {s['cached'] / s['recompute']:8.2f}x  (target >= 3x)", flush=True)

    model.train()
    sft = bench_sft(model, tokenizer, cfg, device)
    print(f"supervised training            {sft['tokens_per_s']:8.0f} tokens/s, {sft['flops_per_s'] / 1e9:.1f} GFLOP/s "
          f"= {sft['flops_per_s'] / peak:.0%} of matmul peak", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        init = save_checkpoint(Path(tmp) / "init.pt", {
            "kind": "sft", "step": 0, "model_config": model.config.to_dict(), "alphabet": tokenizer.alphabet,
            "model": model.state_dict(), "task": "add", "levels": [3]})
        # One RL step: sampling (8 new tokens for 256 rows) + forward/backward over the batch.
        prompt_len = len("123+456=") + 1
        seq = prompt_len + 8
        step_flops = (forward_flops(model.config, seq, n_tokens=seq) * 256  # sampling (prefill + decode)
                      + 3 * forward_flops(model.config, seq) * 256)  # update: forward + backward
        rows = {}
        # the default (plain) scoring, and TEPO with the speed optimisation that reads each prompt once
        for name, algo, scoring in (("tepo", "tepo", "plain"), ("tepo+shared_prompt", "tepo", "shared_prompt"),
                                    ("grpo", "grpo", "plain")):
            r = bench_rl(init, algo, cfg, Path(tmp) / name.replace("+", "_"), scoring)
            rows[name] = r
            flops = step_flops + (forward_flops(model.config, seq) * 256 if algo == "grpo" else 0.0)
            print(f"RL step {name:17s} 32x8, 8 tokens   {r['step_s']:8.3f} s  = sampling {r['sample_s']:.3f} + "
                  f"extra forward {r['extra_forward_s']:.3f} + update {r['update_s'] - r['extra_forward_s']:.3f}  "
                  f"({flops / 1e9:.1f} GFLOP as full passes, {flops / r['step_s'] / peak:.0%} of matmul peak; "
                  f"target <= 0.25 s)",
                  flush=True)
        print(f"shared-prompt scoring           {rows['tepo']['update_s'] / rows['tepo+shared_prompt']['update_s']:8.2f}x "
              f"faster update than the plain pass (TEPO, the same run)", flush=True)
    return {"matmul_flops": peak, "sampler": s, "sft": sft, "rl": rows}


def main(argv: list[str] | None = None) -> int:
    """``python -m minitepo.lab.bench [--flags]``: the same as ``minitepo bench``."""
    parser = argparse.ArgumentParser(prog="python -m minitepo.lab.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: 1)")
    add_flags(parser, BenchConfig)
    args = parser.parse_args(argv)
    set_cpu_threads(args.threads)
    run(from_args(BenchConfig, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
