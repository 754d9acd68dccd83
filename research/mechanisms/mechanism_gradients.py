"""How much of the gradient each TEPO ingredient changes, measured on real rollouts (research/mechanisms/README.md).

    python3 research/mechanisms/mechanism_gradients.py --init runs/mech/add_or_cot-warmstart/checkpoint.pt \
        --out research/mechanisms/data/gradients.json

For each setting of the page (experiment A: one pass of 4 optimizer steps, no dynamic sampling; experiment B: two
passes of 4, dynamic sampling), it samples ``--rollouts`` rollouts from the warm start with the pilot seed, and
steps the setting's own loss through each rollout as the trainer does (A3's loss in A, S in B). At every optimizer
step, before the update, it computes the full parameter gradient of both sides of each comparison at the same
weights, on the same mini-batch and the same forward pass:

* aggregation: token-mean against the per-sequence mean (TEPO's ratio, mask off; and DAPO's token ratio);
* ratio: TEPO's sequence ratio with its token log-ratio clip against DAPO's token ratio and clip (token-mean,
  mask off);
* mask: S against S without the mask; and S against the mask without its entropy condition.

and reports ``||g_a - g_b|| / ||g_b||`` (mean, median and largest over the steps) and ``1 - cos(g_a, g_b)`` (mean),
on the first (on-policy) step of each rollout and over the later steps, in float64. Aggregations scale the gradient differently (AdamW cancels a constant factor), so for them
the cosine is the number that matters.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from minitepo.lab.rl_config import RLConfig  # noqa: E402
from minitepo.lab.rl_run import make_trainer  # noqa: E402
from minitepo.losses import TEPO_MASK_TOL, dapo_loss, step_normalizer, tepo_loss  # noqa: E402
from minitepo.advantages import advantages_for  # noqa: E402
from minitepo.rl import splits  # noqa: E402

SETTINGS = {
    "A (4 steps per rollout, no dynamic sampling)": dict(algo="tepo", beta_mask=0.0, dynamic_sampling=False,
                                                          minibatches=4, epochs=1),
    "B (8 steps per rollout, dynamic sampling)": dict(algo="tepo", minibatches=4, epochs=2),
}
MASK_OFF = dict(beta_mask=0.0)
# (ingredient, compared, loss a, loss b): each loss is (function, keyword overrides)
COMPARISONS = (
    ("aggregation", "token-mean vs per-sequence (TEPO ratio)", (tepo_loss, {**MASK_OFF}),
     (tepo_loss, {**MASK_OFF, "agg": "seq-mean-token-mean"})),
    ("aggregation", "token-mean vs per-sequence (token ratio)", (dapo_loss, {}),
     (dapo_loss, {"agg": "seq-mean-token-mean"})),
    ("ratio", "TEPO's sequence ratio vs token ratio (token-mean)", (tepo_loss, {**MASK_OFF}), (dapo_loss, {})),
    ("mask", "S vs S without the mask", (tepo_loss, {}), (tepo_loss, {**MASK_OFF})),
    ("mask", "S vs mask without entropy condition", (tepo_loss, {}),
     (tepo_loss, {"mask_criterion": "positive"})),
)


def flat_grad(loss: torch.Tensor, params: list[torch.Tensor]) -> torch.Tensor:
    grads = torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
    return torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params)]).double()


def loss_of(function, overrides: dict, micro, advantages, logp, entropy, max_len: int) -> torch.Tensor:
    agg = overrides.get("agg", "token-mean")
    extra = {"mask_tol": TEPO_MASK_TOL} if function is tepo_loss else {}
    loss, _ = function(logp=logp, old_logp=micro.old_logp, advantages=advantages, mask=micro.mask, entropy=entropy,
                       old_entropy=micro.old_entropy, normalizer=step_normalizer(micro.mask, agg, max_len),
                       max_len=max_len, **extra, **overrides)
    return loss


def measure(init: str, setting: dict, rollouts: int, seed: int) -> list[dict]:
    """Per comparison, the gradient changes at every optimizer step of ``rollouts`` rollouts (first step of each
    rollout: on-policy)."""
    config = RLConfig(init=init, task="add_or_cot", levels="3", prompts=32, group_size=8, temperature=0.7, lr=2e-4,
                      min_lr_frac=0.1, iterations=rollouts, seed=seed, device="cpu", out="runs/mech/gradients",
                      scoring="shared_prompt",
                      overwrite=True, progress=False, **setting)
    trainer = make_trainer(config)
    params = [p for p in trainer.model.parameters() if p.requires_grad]
    steps = []
    for _ in range(rollouts):
        rollout, _ = trainer.sample_rollout()
        advantages = advantages_for(trainer.facts.advantages, rollout)
        B = rollout.mask.size(0)
        for epoch in range(trainer.config.epochs):
            order = torch.randperm(B, generator=trainer.generators["shuffle"])
            for index, rows in enumerate(splits(order, trainer.config.minibatches)):
                micro = rollout.select(rows)
                trainer.model.train()
                logp, entropy = trainer.score(trainer.model, micro)
                step = {"first": epoch == 0 and index == 0}
                for ingredient, compared, (fa, ka), (fb, kb) in COMPARISONS:
                    ga = flat_grad(loss_of(fa, ka, micro, advantages[rows], logp, entropy, trainer.max_len), params)
                    gb = flat_grad(loss_of(fb, kb, micro, advantages[rows], logp, entropy, trainer.max_len), params)
                    step[compared] = ((ga - gb).norm() / gb.norm().clamp(min=1e-30)).item(), \
                        (1 - torch.nn.functional.cosine_similarity(ga, gb, dim=0)).item()
                steps.append(step)
                trainer.optimizer_step(rollout, advantages, None, rows)   # the setting's own update, as trained
        trainer.iteration += 1
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--init", required=True)
    parser.add_argument("--rollouts", type=int, default=3)
    parser.add_argument("--seed", type=int, default=900)
    parser.add_argument("--out", default="research/mechanisms/data/gradients.json")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    rows = []
    for name, setting in SETTINGS.items():
        steps = measure(args.init, setting, args.rollouts, args.seed)
        for ingredient, compared, _, _ in COMPARISONS:
            for which, chosen in (("first step", [s for s in steps if s["first"]]),
                                  ("later steps", [s for s in steps if not s["first"]])):
                if not chosen:
                    continue
                rel = sorted(s[compared][0] for s in chosen)
                rows.append({"setting": name, "ingredient": ingredient, "compared": compared, "steps": which,
                             "n_steps": len(chosen), "rel_change": sum(rel) / len(rel),
                             "rel_change_median": rel[len(rel) // 2], "rel_change_max": rel[-1],
                             "one_minus_cos": sum(s[compared][1] for s in chosen) / len(chosen)})
                print(f"{name:45s} {compared:55s} {which:11s} rel {rows[-1]['rel_change']:.4f} "
                      f"(median {rows[-1]['rel_change_median']:.4f}, max {rel[-1]:.4f})  "
                      f"1-cos {rows[-1]['one_minus_cos']:.4f}", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"init": args.init, "rollouts": args.rollouts, "seed": args.seed,
                                          "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
