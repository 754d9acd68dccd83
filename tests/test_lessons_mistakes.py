"""The lessons' checks catch the mistakes learners make, and say which quantity is wrong.

Each case plants one typical mistake inside one exercise's solution (between its ``### BEGIN SOLUTION`` and
``### END SOLUTION`` markers, the only lines a learner writes), runs the lesson as a script up to the end of that
exercise's check cell, and asserts that it fails with a ``CheckFailed`` naming the exercise and the quantity.
A student copy (every solution a stub) fails at its first exercise with "exercise 1 not done yet", and the
checks helper treats ``...``, ``pass``, ``raise NotImplementedError`` and a returned None the same way.

Marked ``lessons`` like tests/test_lessons.py: ``pytest -m "not lessons"`` skips them.
"""

import importlib.util
import os
import re
from pathlib import Path

import pytest

from lesson_runner import run_script

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ROOT / "lessons"
TIMEOUT_S = float(os.environ.get("MINITEPO_LESSON_TIMEOUT", "60"))

pytestmark = pytest.mark.lessons


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_student = load("make_student", LESSONS / "make_student.py")
checks = load("lesson_checks", LESSONS / "checks.py")

# (what the learner got wrong, lesson, exercise, text in the solution, the mistake, words the failure must name)
MISTAKES = [
    ("forgotten temperature", "01_prompt_to_rollout.py", 1,
     "logits.float() / temperature", "logits.float()", ["exercise 1", "logp on real tokens", "temperature"]),
    ("population std instead of Bessel's", "02_rewards_groups_advantages.py", 1,
     "R.std(dim=1, keepdim=True)", "R.std(dim=1, keepdim=True, unbiased=False)",
     ["exercise 1", "z-score advantages", "Bessel"]),
    ("B for B' in seq-mean-token-mean", "03_aggregation.py", 1,
     '"seq-mean-token-mean": lambda: m.any(-1).sum(),', '"seq-mean-token-mean": lambda: m.shape[0],',
     ["exercise 1", "seq-mean-token-mean", "B'"]),
    ("token ratio for s_i (arithmetic mean)", "05_gspo_sequence_ratio.py", 1,
     "return torch.exp(diff.sum(-1) / mask.sum(-1).clamp(min=1))",
     "return torch.where(mask.bool(), diff.exp(), torch.zeros_like(diff)).sum(-1) / mask.sum(-1).clamp(min=1)",
     ["exercise 1", "s_0", "GEOMETRIC"]),
    ("mask without the response mask", "06_tepo.py", 1,
     "return (advantages > 0)[:, None] & dropped & real", "return (advantages > 0)[:, None] & dropped",
     ["exercise 1", "mask M", "padding"]),
    ("A >= 0 instead of A > 0", "06_tepo.py", 1,
     "return (advantages > 0)[:, None] & dropped & real", "return (advantages >= 0)[:, None] & dropped & real",
     ["exercise 1", "mask M", "strictly A > 0"]),
    ("GSPO's per-sequence mean instead of the token-mean", "06_tepo.py", 2,
     "return torch.where(real, lam, torch.zeros_like(lam)).sum() / mask.sum()",
     "return (torch.where(real, lam, torch.zeros_like(lam)).sum(-1) / mask.sum(-1)).mean()",
     ["exercise 2", "policy loss"]),
    ("sign-blind clip", "10_capstone_tepo.py", 1,
     "lam = torch.maximum(-s_tok * A, -s_tok.clamp(1 - eps_low, 1 + eps_high) * A)",
     "lam = -s_tok.clamp(1 - eps_low, 1 + eps_high) * A",
     ["exercise 1", "policy term", "pessimistic"]),
    ("returning the library's function", "10_capstone_tepo.py", 1,
     "    real = mask.bool()\n    x = torch.where(real, logp - old_logp, torch.zeros_like(logp))",
     "    return tepo_loss(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask, entropy=entropy,\n"
     "                     old_entropy=old_entropy, beta_mask=beta_mask, mask_tol=tol, **READING)\n"
     "    x = torch.where(real, logp - old_logp, torch.zeros_like(logp))",
     ["exercise 1", "returns (loss, parts)", "intermediates"]),
    ("k3 against the wrong sign of the log-ratio", "10_capstone_tepo.py", 1,
     "k3 = torch.exp(-x) + x - 1.0", "k3 = torch.exp(x) - x - 1.0", ["exercise 1", "k3 on real tokens"]),
    ("sampler ignoring the temperature", "10_capstone_tepo.py", 3,
     "torch.log_softmax(logits.float() / temperature, -1)", "torch.log_softmax(logits.float(), -1)",
     ["exercise 3", "log-probs of your samples", "temperature"]),
    ("sampler's mask without the EOS", "10_capstone_tepo.py", 3,
     "after_eos = (is_eos.long().cumsum(-1) - is_eos.long()) > 0", "after_eos = is_eos.long().cumsum(-1) > 0",
     ["exercise 3", "response mask", "including"]),
    ("RL step scoring with the warm model instead of the current one", "10_capstone_tepo.py", 2,
     "logp, entropy = score_rollout(model, mb)                                 # current theta, with gradient",
     "logp, entropy = score_rollout(warm_model, mb)", ["exercise 2"]),
    ("sign-blind token clip (the shipped reading)", "10_capstone_tepo.py", "1b",
     "held = (((A > 0) & (x > delta_high)) | ((A < 0) & (x < -delta_low))) & real",
     "held = ((x > delta_high) | (x < -delta_low)) & real",
     ["exercise 1b", "held tokens with A > 0", "pessimistic"]),
    ("dynamic sampling's rounds counted from r = 0 (one round too many)", "09_full_run.py", 2,
     "return 1 + sum(fewer_than_P(r * P) for r in range(1, max_rounds))",
     "return 1 + sum(fewer_than_P(r * P) for r in range(0, max_rounds))",
     ["exercise 2", "E[rounds], every group informative"]),
    ("B for B' in the per-sequence weight", "12_when_token_level_matters.py", 1,
     "b_prime = m.any(-1).sum().double()", "b_prime = torch.tensor(float(m.shape[0]))",
     ["exercise 1", "weights, seq-mean-token-mean", "empty row", "B'"]),
    ("the padded width for |o_i| in the per-sequence weight", "12_when_token_level_matters.py", 1,
     "lengths = m.sum(-1, keepdim=True).double().clamp(min=1)",
     "lengths = torch.full((m.shape[0], 1), float(m.shape[1]), dtype=torch.float64)",
     ["exercise 1", "weights, seq-mean-token-mean, the add_or_cot batch", "padded width"]),
    ("the faster switch predicted from one token's weight", "12_when_token_level_matters.py", 2,
     'return max(steps_share, key=steps_share.get), "share"', 'return "seq-mean-token-mean", "per_token"',
     ["exercise 2", "took up the steps form faster", "seq-mean-token-mean"]),
    ("a prediction its own reason argues against", "12_when_token_level_matters.py", 2,
     'return max(steps_share, key=steps_share.get), "share"', 'return min(steps_share, key=steps_share.get), "share"',
     ["exercise 2", "argues for the aggregation you chose"]),
    # Lessons issue 31: every exercise of every lesson catches its natural wrong answer.
    ("entropy in bits instead of nats", "01_prompt_to_rollout.py", 2,
     "    return float(entropy)\n", "    return float(entropy) / math.log(2)\n", ["exercise 2"]),
    ("EOS counted at padding (response mask ignored)", "01_prompt_to_rollout.py", 3,
     "is_eos = (rollout.response_ids == tokenizer.eos_id) & rollout.mask.bool()",
     "is_eos = (rollout.response_ids == tokenizer.eos_id)", ["exercise 3"]),
    ("REINFORCE that ignores the baseline b", "01b_policy_gradient.py", 1,
     "return ((rewards - b)[:, None] * softmax_score(logits, actions)).mean(0)",
     "return (rewards[:, None] * softmax_score(logits, actions)).mean(0)", ["exercise 1", "b = 0.7"]),
    ("leave-one-out mean divided by G", "01b_policy_gradient.py", 2,
     "b = (R.sum(1, keepdim=True) - R) / (G - 1)", "b = (R.sum(1, keepdim=True) - R) / G",
     ["exercise 2", "leave-one-out"]),
    ("importance weight upside down", "01b_policy_gradient.py", 3,
     "return (torch.exp(logp_new - logp_old) * values).mean()", "return (torch.exp(logp_old - logp_new) * values).mean()",
     ["exercise 3", "importance-weighted"]),
    ("batch-mean advantages instead of the group's", "02_rewards_groups_advantages.py", 2,
     "advantages = group_advantages(rewards, group_size=G)", "advantages = rewards - rewards.mean()", ["exercise 2"]),
    ("overlong ramp measured from L_max", "02_rewards_groups_advantages.py", 3,
     "ramp = ((L_max - L_c) - L) / L_c", "ramp = (L_max - L) / L_c", ["exercise 3"]),
    ("padded width as L_max without the mask", "03_aggregation.py", 2,
     "return torch.where(mask.bool(), per_token, torch.zeros_like(per_token)).sum() / per_token.numel()",
     "return per_token.sum() / per_token.numel()", ["exercise 2", "junk at padding"]),
    ("each micro-batch divides by its own normaliser", "03_aggregation.py", 3,
     "mask=mask[rows], agg=mode, normalizer=D)", "mask=mask[rows], agg=mode, max_len=max_len)",
     ["exercise 3", "accumulated gradient"]),
    ("predicting a length bias for DAPO", "04_grpo_dapo_drgrpo.py", 1,
     'return {"GRPO": True, "DAPO": False, "Dr. GRPO": False}', 'return {"GRPO": True, "DAPO": True, "Dr. GRPO": False}',
     ["exercise 1"]),
    ("B for B' in the per-token weight", "04_grpo_dapo_drgrpo.py", 2,
     "weight = 1.0 / (n_seqs * lengths.clamp(min=1))", "weight = 1.0 / (mask.shape[0] * lengths.clamp(min=1))",
     ["exercise 2"]),
    ("k3 with the log-ratio the wrong way round", "04_grpo_dapo_drgrpo.py", 3,
     "    x = ref_logp - logp\n    return torch.exp(x)", "    x = logp - ref_logp\n    return torch.exp(x)",
     ["exercise 3"]),
    ("AM-GM gap over the padded width", "05_gspo_sequence_ratio.py", 2,
     "n = mask.sum(-1).clamp(min=1)", "n = mask.shape[-1]", ["exercise 2"]),
    ("sign-blind sequence clip (GSPO)", "05_gspo_sequence_ratio.py", 3,
     "clipped = ((advantages > 0) & (s > 1 + eps_high)) | ((advantages < 0) & (s < 1 - eps_low))",
     "clipped = (s > 1 + eps_high) | (s < 1 - eps_low)", ["exercise 3"]),
    ("sign-blind token clip (lesson 6)", "06_tepo.py", 2,
     "held = (((A > 0) & (x > delta_high)) | ((A < 0) & (x < -delta_low))) & real       # the pessimistic side only",
     "held = ((x > delta_high) | (x < -delta_low)) & real", ["exercise 2", "nothing held"]),
    ("GTPO bonus without removing alpha1 R", "07_gtpo_grpo_s.py", 1,
     "bonus = torch.where(pos, shaped - alpha1 * rewards[:, None], torch.zeros_like(shaped)).sum(0)",
     "bonus = torch.where(pos, shaped, torch.zeros_like(shaped)).sum(0)", ["exercise 1"]),
    ("GRPO-S weighs wrong answers by entropy, not its inverse", "07_gtpo_grpo_s.py", 2,
     "weights = {k: 1.0 / mean_entropy(k) for k in same_side}", "weights = {k: mean_entropy(k) for k in same_side}",
     ["exercise 2"]),
    ("Dr. GRPO's advantages divided by the std", "08_property_testing.py", 1,
     'return group_advantages(rewards, group_ids, scale="none" if name == "dr_grpo" else "std")',
     'return group_advantages(rewards, group_ids, scale="std")', ["exercise 1"]),
    ("micro-batches without the step's normaliser (lesson 8)", "08_property_testing.py", 2,
     "loss, grad = run(name, b, adv, rows=range(lo, hi), normalizer=Z)",
     "loss, grad = run(name, b, adv, rows=range(lo, hi))", ["exercise 2"]),
    ("the fix still averages over the padded width", "08_property_testing.py", 3,
     "x.sum(-1) / m.sum(-1).clamp(min=1))                          # mean over REAL tokens only", "x.mean(-1))",
     ["exercise 3"]),
    ("no signal only when every answer is right", "09_full_run.py", 1,
     "return p ** G + (1 - p) ** G", "return p ** G", ["exercise 1"]),
    ("two-point spread from one side only", "09_full_run.py", 3,
     "return (no_signal_probability(p_mean + d, G) + no_signal_probability(p_mean - d, G)) / 2",
     "return no_signal_probability(p_mean + d, G)", ["exercise 3"]),
    ("first step strictly above the threshold (lesson 9)", "09_full_run.py", 4,
     "if key in row and row[key] >= threshold:", "if key in row and row[key] > threshold:", ["exercise 4"]),
    ("sampler that takes the argmax after the first token", "10_capstone_tepo.py", 3,
     "tok = torch.multinomial(logprobs.exp(), 1, generator=generator).squeeze(-1)",
     "tok = (torch.multinomial(logprobs.exp(), 1, generator=generator).squeeze(-1) if not tokens\n"
     "                   else logprobs.argmax(-1))", ["exercise 3", "later tokens"]),
    ("first iteration strictly above the target (lesson 11)", "11_objectives_side_by_side.py", 1,
     "return next((s for s, a in zip(steps, accs) if a >= target), None)",
     "return next((s for s, a in zip(steps, accs) if a > target), None)", ["exercise 1", "first iteration at 60%"]),
    ("entropy at the first evaluation instead of the last", "11_objectives_side_by_side.py", 2,
     'return max(data, key=lambda name: mean_curve(data[name], "entropy")[-1])',
     'return max(data, key=lambda name: mean_curve(data[name], "entropy")[0])', ["exercise 2", "highest final entropy"]),
    # Lessons issue 44: the natural mistakes the checks had let through.
    ("log V written down instead of computed with exercise 1's function", "01_prompt_to_rollout.py", 2,
     "    _, entropy = my_logp_entropy(logits, torch.zeros((1, 1), dtype=torch.long), 1.0)\n    return float(entropy)\n",
     "    return math.log(V)\n", ["exercise 2", "calls my_logp_entropy"]),
    ("B for B' in GSPO's gradient", "05_gspo_sequence_ratio.py", 3,
     "n_resp = (lengths > 0).sum()\n    clipped", "n_resp = mask.shape[0]\n    clipped", ["exercise 3", "empty rows", "B'"]),
    ("the sampler's mask from tokens != PAD", "10_capstone_tepo.py", 3,
     "return tokens, logp, (~after_eos).float()", "return tokens, logp, (tokens != pad_id).float()",
     ["exercise 3", "response mask, fresh model", "tokens != pad_id"]),
    ("one seed's entropy instead of the mean over seeds", "11_objectives_side_by_side.py", 2,
     'return max(data, key=lambda name: mean_curve(data[name], "entropy")[-1])',
     'return max(data, key=lambda name: next(iter(data[name].values()))["entropy"][-1])',
     ["exercise 2", "first seed disagrees with the mean"]),
    # Lessons issue 44, part 3: every mask and normaliser exercise tried on a batch with an empty row.
    ("per-row mean without the clamp (0/0 on an empty row)", "03_aggregation.py", 1,
     "total = (x.sum(-1) / m.sum(-1).clamp(min=1)).sum()", "total = (x.sum(-1) / m.sum(-1)).sum()",
     ["exercise 1", "seq-mean-token-mean, a batch with an empty row", "NaN"]),
    ("the step's normaliser written by hand with B for B'", "03_aggregation.py", 3,
     'D = step_normalizer(mask, mode, max_len=max_len if mode == "seq-mean-token-sum-norm" else None)',
     'D = {"token-mean": mask.sum(), "seq-mean-token-sum-norm": mask.shape[0] * max_len}.get(mode, mask.shape[0])',
     ["exercise 3", "a batch with an empty row", "B'"]),
    ("s_i without the clamp (0/0 on an empty row)", "05_gspo_sequence_ratio.py", 1,
     "return torch.exp(diff.sum(-1) / mask.sum(-1).clamp(min=1))", "return torch.exp(diff.sum(-1) / mask.sum(-1))",
     ["exercise 1", "s_i, a batch with two empty rows", "NaN"]),
    ("AM-GM gap of -1 on an empty row (mean ratio 0, s_i 1)", "05_gspo_sequence_ratio.py", 2,
     "return torch.where(m.any(-1), gap, torch.zeros_like(gap))", "return gap",
     ["exercise 2", "gap, a batch with two empty rows", "no ratios to compare"]),
    ("no clamp on |o_i| and padding zeroed by a product (NaN on an empty row)", "06_tepo.py", 2,
     "s = torch.exp(x_clip.sum(-1) / mask.sum(-1).clamp(min=1))", "s = torch.exp(x_clip.sum(-1) / mask.sum(-1))\n"
     "    return (-A * s.detach()[:, None] * torch.exp(x_clip - x_clip.detach()) * mask).sum() / mask.sum()",
     ["exercise 2", "a batch with an empty row", "NaN"]),
    ("the fix's mean over real tokens without the clamp (NaN gradient on an empty row)", "08_property_testing.py", 3,
     "x.sum(-1) / m.sum(-1).clamp(min=1))", "x.sum(-1) / m.sum(-1))",
     ["exercise 3", "gradient (vs tepo_loss), a batch with an empty row", "NaN"]),
    ("s_i without the clamp (NaN gradient on an empty row)", "10_capstone_tepo.py", 1,
     "s = torch.exp(x.sum(-1) / real.sum(-1).clamp(min=1))", "s = torch.exp(x.sum(-1) / real.sum(-1))",
     ["exercise 1", "s_i, a batch with an empty row", "NaN"]),
    ("s~_i without the clamp (NaN on an empty row)", "10_capstone_tepo.py", "1b",
     "s = torch.exp(x_clip.sum(-1) / real.sum(-1).clamp(min=1))", "s = torch.exp(x_clip.sum(-1) / real.sum(-1))",
     ["exercise 1b", "s~_i, a batch with an empty row", "NaN"]),
    ("no clamp on |o_i| and the weight as a product with the mask (0 * inf on an empty row)",
     "12_when_token_level_matters.py", 1,
     "return torch.where(m, 1.0 / (b_prime * lengths), torch.zeros((), dtype=torch.float64))",
     "return m.double() / (b_prime * m.sum(-1, keepdim=True).double())",
     ["exercise 1", "with an empty row", "NaN"]),
]


def planted(text: str, exercise: int | str, old: str, new: str) -> str:
    """``text`` with ``old`` replaced by ``new`` inside a solution block, cut after exercise ``exercise``'s checks."""
    blocks = make_student.solution_blocks(text)
    lines = text.splitlines(keepends=True)
    starts = [sum(len(x) for x in lines[:b]) for b, _ in blocks]
    ends = [sum(len(x) for x in lines[:e]) for _, e in blocks]
    at = text.find(old)
    assert at >= 0, f"{old!r} is not in the lesson any more: update the mistake"
    assert any(s <= at and at + len(old) <= e for s, e in zip(starts, ends)), f"{old!r} is not inside a solution"
    text = text[:at] + new + text[at + len(old):]
    checked = re.search(rf"^with exercise\([\"']?{exercise}\b", text, flags=re.M)   # exercise(2, ...) or ("1b", ...)
    assert checked, f"no 'with exercise({exercise}, ...)' block"
    nxt = text.find("\n# %%", checked.end())
    return text if nxt < 0 else text[:nxt + 1]


def run(path: Path):
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    env.pop("MINITEPO_LESSONS", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return run_script(path, cwd=path.parent, env=env, timeout=TIMEOUT_S)


def default_tier_first(mistakes):
    """The first mistake planted in each lesson runs in the default tier; the lesson's further mistakes are marked
    ``slow`` (each runs a lesson, 3-9 s: 45 of them took about 4 of CI's 10 minutes). ``-m slow`` runs the rest."""
    seen, params = set(), []
    for m in mistakes:
        params.append(pytest.param(*m, id=m[0], marks=[pytest.mark.slow] if m[1] in seen else []))
        seen.add(m[1])
    return params


@pytest.mark.parametrize("what, lesson, exercise, old, new, words", default_tier_first(MISTAKES))
def test_mistake_is_caught_and_named(tmp_path, what, lesson, exercise, old, new, words):
    """A planted mistake fails the exercise's check, with a message that names the exercise and the quantity."""
    path = tmp_path / lesson                           # outside lessons/: also exercises the checks import fallback
    path.write_text(planted((LESSONS / lesson).read_text(), exercise, old, new))
    proc = run(path)
    assert proc.returncode != 0, f"{what}: the lesson's checks let the mistake through\n{proc.stdout[-2000:]}"
    assert "CheckFailed" in proc.stderr, f"{what}: failed without a named check:\n{proc.stderr[-3000:]}"
    message = proc.stderr[proc.stderr.rfind("CheckFailed"):]
    for word in words:
        assert word in message, f"{what}: the failure does not name {word!r}:\n{message}"


def test_student_copy_says_not_done_yet(tmp_path):
    """A student copy stops at its first exercise with "exercise 1 not done yet", not a TypeError."""
    (copy,) = make_student.write_student_copies(tmp_path, [LESSONS / "05_gspo_sequence_ratio.py"])
    proc = run(copy)
    assert proc.returncode != 0 and "ExerciseNotDone" in proc.stderr, proc.stderr[-2000:]
    assert "exercise 1 not done yet" in proc.stderr and "my_seq_ratio" in proc.stderr, proc.stderr[-2000:]


def test_make_student_drops_the_solutions_section():
    text = (LESSONS / "03_aggregation.py").read_text()
    assert "# ## Solutions" in text
    student = make_student.student_text(text)
    assert "1.25" not in student.split("# ## Solutions")[-1] and student.rstrip().endswith("not in this student copy.")


@pytest.mark.parametrize("body", ["...", "pass", "raise NotImplementedError", 'raise NotImplementedError("exercise")'])
def test_stub_bodies_are_not_done(body, tmp_path):
    """Every stub a learner might leave is reported as "exercise N not done yet" before any check runs."""
    source = f'def my_fn(x):\n    """Docstring."""\n    {body}\n'
    path = tmp_path / "stub.py"
    path.write_text(source)
    namespace = {}
    exec(compile(source, str(path), "exec"), namespace)
    import linecache
    linecache.updatecache(str(path))
    with pytest.raises(checks.ExerciseNotDone, match="exercise 4 not done yet"):
        with checks.exercise(4, namespace["my_fn"]):
            checks.cmp("x", namespace["my_fn"](1), 1)


def test_none_and_unpacking_none_are_not_done():
    with pytest.raises(checks.ExerciseNotDone, match="exercise 2 not done yet"):
        with checks.exercise(2):
            checks.cmp("s_i", None, 1.0)
    with pytest.raises(checks.ExerciseNotDone, match="exercise 3 not done yet"):
        with checks.exercise(3):
            a, b = None                                     # noqa: F841  what a stub's None does to an unpacking


def test_cmp_names_the_quantity_and_where():
    import torch
    with pytest.raises(checks.CheckFailed, match=r"(?s)exercise 7: mask M differs.*index \(1, 2\).*hint: strictly"):
        with checks.exercise(7):
            mine = torch.zeros(2, 3, dtype=torch.bool)
            ref = mine.clone()
            ref[1, 2] = True
            checks.cmp("mask M", mine, ref, hint="strictly A > 0")
    with pytest.raises(checks.CheckFailed, match=r"loss: shape \(2,\), expected \(\)"):
        checks.cmp("loss", torch.zeros(2), torch.tensor(0.0))
    checks.cmp("close enough", torch.tensor([1.0, 2.0]), [1.0, 2.0 + 1e-9])
