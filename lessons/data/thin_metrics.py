"""Make the thinned copy of a quickstart run's metrics that lesson 9 reads.

    python lessons/data/thin_metrics.py runs/quickstart lessons/data   # after: python3 -m minitepo quickstart

Reads RUN/rl/metrics.jsonl and RUN/warmstart/metrics.jsonl and writes quickstart_rl_metrics.jsonl and
quickstart_warmstart_metrics.jsonl into OUT: every evaluation row, and of the other rows the even
steps plus step 1; only the keys below; floats rounded to 5 significant digits.
"""

import json
import sys
from pathlib import Path

RL_KEYS = ("step", "charts/reward_mean", "charts/reward_std", "charts/zero_spread_groups", "charts/sample_rounds",
           "charts/groups_trained", "charts/responses_sampled", "charts/entropy_sampled", "charts/entropy_trained",
           "charts/entropy",  # older runs' name for charts/entropy_trained
           "charts/response_len_sampled", "charts/response_len", "charts/lr", "charts/grad_norm", "charts/opt_steps",
           "losses/clip_frac", "losses/clip/pos_high", "losses/clip/neg_low", "losses/approx_kl_old", "losses/ratio_mean",
           "losses/seq_ratio_mean", "losses/mask_kl", "tepo/mask_frac", "tepo/mask_frac_first_step",
           "tepo/mask_frac_later_steps", "time/sample_s", "time/update_s", "time/train_s", "eval/greedy_acc/all", "eval/greedy_acc/level/3",
           "eval/pass@4")  # pass@4 only where the run measured it (today's quickstart does not: pass_k=0)
SFT_KEYS = ("step", "losses/sft", "charts/lr", "charts/settle_trigger_acc", "charts/seconds", "eval/greedy_acc/all",
            "eval/greedy_acc/level/1", "eval/greedy_acc/level/2", "eval/greedy_acc/level/3")


def thin(path: Path, keys, keep_row) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out = []
    for row in rows:
        if any(k.startswith("eval/") for k in row) or keep_row(row["step"]):
            out.append({k: (float(f"{row[k]:.5g}") if isinstance(row[k], float) else row[k]) for k in keys if k in row})
    return out


def write(rows: list[dict], path: Path) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    run, out = Path(sys.argv[1]), Path(sys.argv[2])
    write(thin(run / "rl" / "metrics.jsonl", RL_KEYS, lambda s: s % 2 == 0 or s == 1),
          out / "quickstart_rl_metrics.jsonl")
    write(thin(run / "warmstart" / "metrics.jsonl", SFT_KEYS, lambda s: True), out / "quickstart_warmstart_metrics.jsonl")
