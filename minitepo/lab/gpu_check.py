"""A short, prepared check of the GPU path:  python -m minitepo.lab.gpu_check

It needs a CUDA device and exits with status 1 on any failed check. On CUDA:
1. the sampler under bf16 autocast: its recorded log-probs agree with a fresh teacher-forced
   forward pass (also under autocast) within a bf16-sized tolerance;
2. a few supervised steps (bf16 autocast, TF32) — the loss must go down;
3. a few RL steps with TEPO and with GRPO (reference model), every metric finite, TEPO's mask
   empty on the first mini-batch;
4. throughput: sampler completions/s and seconds per RL step (32 prompts x 8 responses).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import torch

from minitepo.device import autocast, pick_device
from minitepo.lab.checkpoint import load_model
from minitepo.lab.rl_config import RLConfig
from minitepo.lab.rl_run import make_trainer
from minitepo.lab.sft_run import SFTConfig, train_sft
from minitepo.rollout import SamplerConfig, encode_prompts, sample, score_rollout

LOGP_TOLERANCE = 0.1
"""Max |sampler logp - teacher-forced logp| under bf16 autocast (bf16 keeps ~3 significant digits;
the KV-cached and full passes round differently). In float32 the two agree within 1e-5."""


def main() -> int:
    if not torch.cuda.is_available():
        print("gpu_check: no CUDA device visible to torch; nothing to check")
        return 1
    device = pick_device("cuda")
    print(f"gpu_check on {torch.cuda.get_device_name(0)}, torch {torch.__version__}", flush=True)
    failures = []

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        sft = train_sft(SFTConfig(task="add", levels="1,2,3", steps=300, eval_every=150, device="cuda",
                                  out=str(tmp / "sft"), progress=False))
        print(f"sft: 300 steps in {time.perf_counter() - t0:.1f}s, held-out accuracy {sft['accuracy']['all']:.3f}")
        if sft["accuracy"]["all"] <= 0.0:
            failures.append("supervised training on CUDA learned nothing in 300 steps")


        model, tokenizer, _ = load_model(tmp / "sft" / "checkpoint.pt", device)
        model.eval()
        prompts = encode_prompts(tokenizer, ["12+34=", "123+456=", "7+8="] * 86)
        gen = torch.Generator(device=device).manual_seed(0)
        with autocast(device, "bf16"):
            rollout = sample(model, prompts, group_size=1, eos_id=tokenizer.eos_id, pad_id=tokenizer.pad_id,
                             config=SamplerConfig(max_new_tokens=8), generator=gen)
            with torch.no_grad():
                logp, entropy = score_rollout(model, rollout)
        gap = ((logp - rollout.old_logp).abs() * rollout.mask).max().item()
        print(f"sampler vs teacher-forced log-probs under bf16 autocast: max gap {gap:.2e} (tolerance {LOGP_TOLERANCE})")
        if not gap <= LOGP_TOLERANCE:
            failures.append(f"sampler log-probs differ from a fresh forward by {gap}")

        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(5):
            with autocast(device, "bf16"):
                sample(model, prompts, group_size=1, eos_id=-1, pad_id=tokenizer.pad_id,
                       config=SamplerConfig(max_new_tokens=12), generator=gen)
        torch.cuda.synchronize()
        print(f"sampler: {5 * len(prompts) / (time.perf_counter() - t0):.0f} completions/s (batch {len(prompts)}, 12 tokens)")

        for algo in ("tepo", "grpo"):
            trainer = make_trainer(RLConfig(init=str(tmp / "sft" / "checkpoint.pt"), algo=algo, levels="3", device="cuda",
                                       out=str(tmp / algo), progress=False, pass_k=0))
            trainer.iterate()  # warm-up
            records = [trainer.iterate() for _ in range(5)]
            step_s = sum(r["time/step_s"] for r in records) / len(records)
            bad = [k for r in records for k, v in r.items() if isinstance(v, float) and not v == v]
            print(f"rl {algo}: {step_s:.3f} s per iteration (32 x 8, 4 optimizer steps), reward "
                  f"{records[-1]['charts/reward_mean']:.3f}" + (f", TEPO mask first/later "
                  f"{records[-1]['tepo/mask_frac_first_step']:.3f}/{records[-1]['tepo/mask_frac_later_steps']:.3f}"
                  if algo == "tepo" else f", kl_ref {records[-1]['losses/kl_ref']:.2e}"))
            if bad:
                failures.append(f"{algo}: non-finite metrics {sorted(set(bad))}")
            first = [r["tepo/mask_frac_first_step"] for r in records] if algo == "tepo" else []
            if any(f != 0.0 for f in first):  # bf16 recomputes the old policy, so theta = theta_old exactly
                failures.append(f"tepo: the first-step mask is not empty under bf16: {first}")

    for f in failures:
        print("FAILED:", f)
    print("gpu_check:", "all checks passed" if not failures else f"{len(failures)} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
