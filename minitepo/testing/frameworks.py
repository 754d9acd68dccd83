"""The kit against real frameworks: verl's registered policy losses and TRL's GRPOTrainer loss.

    python -m minitepo.testing.frameworks            # every case below, a table each (about a minute)
    python -m minitepo.testing.frameworks --markdown # the same as docs/testing-kit.md prints it

Each case is a loss wrapped by ``verl_policy_loss`` or ``trl_grpo_loss`` and the minitepo family it claims to
be (which sets the aggregation weights the on-policy check expects). The harness mirrors what each framework
does around its loss, and nothing more:

* verl 0.9.1: ``verl.workers.utils.losses.ppo_loss`` writes the mini-batch's ``batch_num_tokens``,
  ``global_batch_size`` (its rows) and ``dp_size`` into ``config.global_batch_info`` before each micro-batch, and
  the FSDP engine adds the micro-batches' gradients. The actor config is verl's own ``ActorConfig`` with
  clip 0.2 / 0.28 (``clip_ratio_c`` 3, verl's default).
* TRL 1.16.0: ``GRPOTrainer._compute_loss`` on a real trainer (a one-layer random Llama; its forward pass is
  replaced by the batch's log-probs), with ``current_gradient_accumulation_steps = steps_per_generation = K``
  and ``num_items_in_batch`` = the step's real tokens, ``beta = 0`` (TRL's default), ``epsilon`` 0.2.

Needs the extras: ``pip install -e '.[verl,trl]'`` (CI: ci/integrations-lock.txt). A case whose framework is
missing is skipped with a note.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass

from minitepo.testing.adapters import trl_grpo_loss, verl_policy_loss
from minitepo.testing.verdicts import check_loss, format_findings

VERL_CASES = (  # (loss mode, loss_agg_mode, minitepo family, loss_scale_factor)
    ("vanilla", "token-mean", "dapo", None),
    ("vanilla", "seq-mean-token-mean", "grpo", None),
    ("vanilla", "seq-mean-token-sum-norm", "dr_grpo", None),
    ("vanilla", "seq-mean-token-sum-norm", "dr_grpo", "max_len"),
    ("gspo", "seq-mean-token-mean", "gspo", None),
    ("geo_mean", "token-mean", "gspo", None),
)
TRL_CASES = (  # (loss_type, minitepo family)
    ("grpo", "grpo"),
    ("bnpo", "dapo"),
    ("dr_grpo", "dr_grpo"),
    ("dapo", "dapo"),
)


@dataclass
class Case:
    label: str  # e.g. "verl vanilla, token-mean"
    like: str  # the minitepo family it is checked as
    loss: object  # the loss in the kit's convention


def verl_actor_config(clip_low: float = 0.2, clip_high: float = 0.28):
    """verl's own ActorConfig with the given clip range (everything else verl's defaults)."""
    from verl.workers.config import ActorConfig
    return ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1, clip_ratio_low=clip_low,
                       clip_ratio_high=clip_high)


def verl_case(mode: str, agg: str, like: str, loss_scale_factor=None) -> Case:
    from verl.trainer.ppo.core_algos import get_policy_loss_fn
    loss = verl_policy_loss(get_policy_loss_fn(mode), verl_actor_config(), agg, loss_scale_factor=loss_scale_factor)
    factor = f", loss_scale_factor={loss_scale_factor}" if loss_scale_factor else ""
    return Case(f"verl {mode}, {agg}{factor}", like, loss)


def trl_trainer(epsilon: float = 0.2):
    """A real GRPOTrainer (TRL) on a one-layer random Llama with a four-letter character tokenizer; its output
    folder is a temporary directory."""
    import torch
    from datasets import Dataset
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from trl import GRPOConfig, GRPOTrainer

    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "a": 4, "b": 5, "c": 6, "d": 7}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                        unk_token="<unk>", padding_side="left")
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(vocab), hidden_size=8, intermediate_size=16,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                         max_position_embeddings=16, pad_token_id=0, bos_token_id=1, eos_token_id=2))
    args = GRPOConfig(output_dir=tempfile.mkdtemp(prefix="minitepo-trl-"), per_device_train_batch_size=4,
                      num_generations=4, max_completion_length=8, report_to="none", save_strategy="no",
                      use_cpu=True, beta=0.0, epsilon=epsilon, logging_steps=1)
    return GRPOTrainer(model=model, reward_funcs=lambda completions, **kw: [0.0] * len(completions), args=args,
                       train_dataset=Dataset.from_dict({"prompt": ["ab", "cd"] * 4}), processing_class=tokenizer)


def trl_compute_loss(trainer, loss_type: str, *, gmpo: bool = False, **attributes):
    """TRL's own ``_compute_loss`` as ``loss_fn(model, inputs)``: GRPOTrainer's with ``loss_type`` (or, with ``gmpo``,
    the experimental GMPOTrainer's), with the trainer's ``loss_type`` and ``attributes`` (e.g. ``epsilon_high``) set for
    the call and restored after it."""
    from trl import GRPOTrainer

    def loss_fn(model, inputs):
        saved = {k: getattr(trainer, k) for k in ("loss_type", *attributes)}
        try:
            trainer.loss_type = loss_type
            for k, v in attributes.items():
                setattr(trainer, k, v)
            if gmpo:
                from trl.experimental.gmpo import GMPOTrainer
                return GMPOTrainer._compute_loss(trainer, model, inputs)
            return GRPOTrainer._compute_loss(trainer, model, inputs)
        finally:
            for k, v in saved.items():
                setattr(trainer, k, v)
    return loss_fn


def trl_cases(trainer=None) -> list[Case]:
    trainer = trainer or trl_trainer()
    return [Case(f"TRL GRPOTrainer, loss_type={lt}", like, trl_grpo_loss(trainer, lt)) for lt, like in TRL_CASES]


def cases(frameworks=("verl", "trl")) -> tuple[list[Case], list[str]]:
    """The cases of the frameworks installed, and a note per framework that is not."""
    out, notes = [], []
    if "verl" in frameworks:
        try:
            out += [verl_case(*c) for c in VERL_CASES]
        except ImportError as e:
            notes.append(f"verl skipped ({e}); pip install -e '.[verl]'")
    if "trl" in frameworks:
        try:
            out += trl_cases()
        except ImportError as e:
            notes.append(f"TRL skipped ({e}); pip install -e '.[trl]'")
    return out, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minitepo.testing.frameworks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print markdown (as docs/testing-kit.md shows it)")
    parser.add_argument("--examples", type=int, default=None, help="examples per property (default: each check's)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0: the page's run)")
    parser.add_argument("--only", default="verl,trl", help="frameworks, comma-separated (default: verl,trl)")
    args = parser.parse_args(argv)
    found, notes = cases(tuple(args.only.split(",")))
    for note in notes:
        print(note, file=sys.stderr)
    violated = 0
    for case in found:
        findings = check_loss(case.loss, like=case.like, max_examples=args.examples, seed=args.seed)
        violated += sum(not f.holds for f in findings)
        head = f"### {case.label} (checked as {case.like})" if args.markdown else f"== {case.label} (as {case.like})"
        print(head, "", format_findings(findings, markdown=args.markdown), "", sep="\n")
    return 1 if violated else 0


if __name__ == "__main__":
    sys.exit(main())
