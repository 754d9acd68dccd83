"""The core's plain loops (``minitepo.sft.train_supervised``, ``minitepo.rl.Trainer.train``) train without a run folder, and
the lab's runs around them compute exactly what they compute: the lab adds folders, checkpoints and rules, never
another algorithm."""

import copy

import torch

from minitepo import GPT, ModelConfig, Tokenizer, make_task
from minitepo.lab import RLConfig, SFTConfig, train_rl, train_sft
from minitepo.lab.runs import read_metrics
from minitepo.rl import Trainer, TrainerConfig
from minitepo.sft import SupervisedConfig, train_supervised

TIME = ("time/", "charts/seconds", "charts/tokens_per_s")


def tiny_model(tokenizer: Tokenizer) -> GPT:
    torch.manual_seed(0)
    return GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=1, n_head=2, n_embd=32))


def largest_difference(a: torch.nn.Module, b: torch.nn.Module) -> float:
    return max((p - q).abs().max().item() for p, q in zip(a.state_dict().values(), b.state_dict().values()))


def test_the_core_sft_loop_and_the_labs_run_train_the_same_weights(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the core loop writes nothing: the folder stays empty
    tokenizer, task = Tokenizer(), make_task("add", levels=(1,))
    core, lab = tiny_model(tokenizer), tiny_model(tokenizer)
    history = train_supervised(core, tokenizer, task, SupervisedConfig(steps=12, batch_size=8, warmup=2, precision="fp32"),
                    eval_every=6)
    assert list(tmp_path.iterdir()) == []
    assert [r["step"] for r in history] == list(range(1, 13)) and "eval/greedy_acc/all" in history[5]
    summary = train_sft(SFTConfig(task="add", levels=(1,), steps=12, batch_size=8, warmup=2, eval_every=6,
                                  device="cpu", precision="fp32", out=str(tmp_path / "sft"), progress=False),
                        model=lab, tokenizer=tokenizer)
    assert largest_difference(core, lab) == 0.0, f"weights differ by up to {largest_difference(core, lab):.3g}"
    assert summary["accuracy"]["all"] == history[-1]["eval/greedy_acc/all"]


def test_the_core_rl_loop_and_the_labs_run_log_the_same_numbers_and_train_the_same_weights(tmp_path, monkeypatch):
    tokenizer, task = Tokenizer(), make_task("add", levels=(1,))
    warm = tiny_model(tokenizer)
    train_supervised(warm, tokenizer, task, SupervisedConfig(steps=20, batch_size=16, warmup=2, lr=3e-3), eval_every=20)
    core, lab = copy.deepcopy(warm), copy.deepcopy(warm)
    settings = dict(algo="tepo", iterations=3, prompts=4, group_size=4, minibatches=2, lr=1e-3, seed=0,
                    dynamic_sampling=False)
    monkeypatch.chdir(tmp_path)
    history = Trainer(TrainerConfig(**settings), core, tokenizer, task).train(eval_every=2)
    assert list(tmp_path.iterdir()) == []
    train_rl(RLConfig(task="add", levels=(1,), eval_every=2, pass_k=0, device="cpu", out=str(tmp_path / "rl"),
                      progress=False, **settings), model=lab, tokenizer=tokenizer)
    logged = read_metrics(tmp_path / "rl")
    assert [r["step"] for r in history] == [r["step"] for r in logged] == [0, 1, 2, 3]
    for mine, theirs in zip(history, logged):
        mine = {k: v for k, v in mine.items() if not k.startswith(TIME)}
        theirs = {k: v for k, v in theirs.items() if not k.startswith(TIME)}
        differ = {k: (mine.get(k), theirs.get(k)) for k in mine.keys() | theirs.keys() if mine.get(k) != theirs.get(k)}
        assert not differ, f"step {mine['step']}: core vs lab {differ}"
    assert largest_difference(core, lab) == 0.0, f"weights differ by up to {largest_difference(core, lab):.3g}"
