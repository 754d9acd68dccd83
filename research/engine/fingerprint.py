"""A fingerprint of what training computes, to show that a refactor changes nothing.

Trains a tiny supervised warm start, then three RL iterations for every objective (TEPO also with each of its
switches, two micro-batches, bf16 autocast and a resumed run), on one CPU thread, and prints one line per run:
a sha256 of the final weights and one of the metrics (every value in metrics.jsonl except wall-clock times).
Run it before and after a change and diff the output (``research/engine/fingerprint-before.txt`` is the reference):

    OMP_NUM_THREADS=1 python3 research/engine/fingerprint.py [--out /tmp/fingerprint] [--scoring shared_prompt]

Issue 43 made the plain teacher-forced pass the RL default (another float order); ``--scoring shared_prompt`` runs the
path every earlier fingerprint ran, and gave the same 23 lines as before the change (fingerprint-issue43-*.txt).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import torch  # noqa: E402

from minitepo.lab import RLConfig, SFTConfig, train_rl, train_sft  # noqa: E402

TIME_KEYS = ("time/", "charts/seconds", "charts/tokens_per_s")

RL_RUNS = {
    **{algo: {"algo": algo} for algo in ("grpo", "dapo", "dr_grpo", "gspo", "gspo_token", "tepo", "gtpo", "grpo_s")},
    "tepo:ratio_clip=token_log": {"algo": "tepo", "ratio_clip": "token_log"},
    "tepo:mask_action=gate": {"algo": "tepo", "mask_action": "gate"},
    "tepo:beta_mask=0": {"algo": "tepo", "beta_mask": 0.0},
    "tepo:mask_criterion=predicted": {"algo": "tepo", "mask_criterion": "predicted"},
    "tepo:mask_criterion=positive": {"algo": "tepo", "mask_criterion": "positive"},
    "tepo:mask_kl=k2": {"algo": "tepo", "mask_kl": "k2"},
    "tepo:mask_kl=k1_abs": {"algo": "tepo", "mask_kl": "k1_abs"},
    "tepo:eps_low=0.0003+eps_high=0.0004+dynamic_sampling": {"algo": "tepo", "eps_low": 3e-4, "eps_high": 4e-4,
                                                              "dynamic_sampling": True},
    "tepo:micro_batches=2": {"algo": "tepo", "micro_batches": 2},
    "tepo:precision=bf16": {"algo": "tepo", "precision": "bf16"},
    "gtpo:adv_norm=split+equal_groups=shape": {"algo": "gtpo", "adv_norm": "split", "equal_groups": "shape"},
    "grpo_s:wrong_weight=entropy": {"algo": "grpo_s", "wrong_weight": "entropy"},
}


def weights_hash(path: Path) -> str:
    state = torch.load(path, map_location="cpu", weights_only=True)["model"]
    h = hashlib.sha256()
    for name in sorted(state):
        h.update(name.encode())
        h.update(state[name].detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def metrics_hash(folder: Path) -> str:
    h = hashlib.sha256()
    for line in (folder / "metrics.jsonl").read_text().splitlines():
        record = {k: v for k, v in json.loads(line).items() if not k.startswith(TIME_KEYS)}
        h.update(json.dumps(record, sort_keys=True).encode())
    return h.hexdigest()[:16]


def fingerprint(folder: Path) -> str:
    return f"weights {weights_hash(folder / 'checkpoint.pt')}  metrics {metrics_hash(folder)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="/tmp/minitepo-fingerprint")
    parser.add_argument("--scoring", default="plain", choices=("plain", "shared_prompt"),
                        help="the RL runs' scoring path; shared_prompt is the one every fingerprint before issue 43 ran")
    args = parser.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    torch.set_num_threads(1)
    tiny = dict(task="add", levels="1", batch_size=32, lr=3e-3, n_layer=2, n_head=2, n_embd=64, device="cpu",
                progress=False)
    train_sft(SFTConfig(steps=300, eval_every=100, out=str(out / "sft"), **tiny))
    print(f"sft                       {fingerprint(out / 'sft')}", flush=True)
    train_sft(SFTConfig(steps=150, eval_every=50, settle_at=0.05, settle_steps=10, settle_check_every=5,
                        settle_check_near=0.5, settle_cap=0.5, out=str(out / "sft-settle"), **tiny))
    print(f"sft:settle                {fingerprint(out / 'sft-settle')}", flush=True)
    init = str(out / "sft" / "checkpoint.pt")
    common = dict(init=init, iterations=3, prompts=8, group_size=4, minibatches=4, epochs=2, lr=1e-2, warmup=1,
                  eval_every=3, pass_k=2, seed=0, device="cpu", progress=False,
                  scoring=args.scoring)
    for name, overrides in RL_RUNS.items():
        folder = out / name.replace(":", "_").replace("=", "-").replace("+", "_")
        train_rl(RLConfig(out=str(folder), **{**common, **overrides}))
        print(f"{name:<25} {fingerprint(folder)}", flush=True)
    folder = out / "tepo-resumed"  # two iterations, then a resume to three: the same as three in one go
    train_rl(RLConfig(out=str(folder), **{**common, "iterations": 2, "algo": "tepo"}))
    train_rl(RLConfig(out=str(folder), resume=True, **{**common, "algo": "tepo"}))
    print(f"{'tepo:resumed':<25} {fingerprint(folder)}", flush=True)


if __name__ == "__main__":
    main()
