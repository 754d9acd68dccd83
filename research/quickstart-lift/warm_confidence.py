"""How confidently wrong a warm start is, teacher-forced on the held-out 3-digit add prompts (issue 29, third round).

For each checkpoint: the teacher-forced exact-match accuracy (every answer token the argmax; for these checkpoints
it equals greedy accuracy), the share of prompts with a wrong answer token held at p > 0.8 (a confident error that
sampling at temperature 0.7-1.0 would rarely escape), and the mean probability of the whole right answer.

    python3 research/quickstart-lift/warm_confidence.py --seeds 100-119 > research/quickstart-lift/data/warm-confidence.txt
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from minitepo.lab.checkpoint import load_model  # noqa: E402
from minitepo.lab.compare import parse_seed_list  # noqa: E402
from minitepo.sft import IGNORE, make_batch  # noqa: E402
from toy_tasks import make_task  # noqa: E402

CONFIDENT = 0.8


def confidence(path: Path) -> dict:
    model, tokenizer, _ = load_model(str(path))
    model.eval()
    examples = [e for e in make_task("add", levels=(1, 2, 3)).eval_set() if e.level == 3]
    x, y = make_batch(examples, tokenizer, "cpu")                          # (B, L) each
    with torch.no_grad():
        p = torch.softmax(model(x).float(), -1)                            # (B, L, V)
    answer = y != IGNORE                                                   # (B, L): answer tokens and EOS
    gold = y.clamp(min=0)
    p_top, top = p.max(-1)                                                 # (B, L)
    wrong = (top != gold) & answer
    p_gold = torch.where(answer, p.gather(-1, gold[..., None]).squeeze(-1), torch.ones_like(p_top))
    return {"tf_acc": 1 - wrong.any(-1).float().mean().item(),
            "confident_wrong": (wrong & (p_top > CONFIDENT)).any(-1).float().mean().item(),
            "p_answer": p_gold.prod(-1).mean().item()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="100-119")
    ap.add_argument("--warm", type=Path, default=ROOT / "runs" / "lift" / "warm", help="folder of seedN/warmstart/")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"# teacher-forced on the 200 held-out 3-digit add prompts; confident: a wrong answer token at p > {CONFIDENT}")
    print("seed  tf_acc  confident_wrong  p(answer)")
    for seed in parse_seed_list(args.seeds):
        c = confidence(args.warm / f"seed{seed}" / "warmstart" / "checkpoint.pt")
        print(f"{seed:4d}  {c['tf_acc']:.3f}   {c['confident_wrong']:.3f}            {c['p_answer']:.3f}")


if __name__ == "__main__":
    main()
