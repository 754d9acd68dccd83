"""The lesson-facing API: what ``from minitepo import ...`` and ``from minitepo.lab import ...`` promise, and the
README's "One RL step by hand"."""

import ast
import random
import re
from pathlib import Path

import pytest
import torch

import minitepo
from minitepo import (GPT, TEPO_MASK_TOL, ModelConfig, Tokenizer, collect_rollout, make_task, sample, SamplerConfig,
                      score_rollout, tepo_loss, tepo_mask)
from minitepo.lab import RLConfig, SFTConfig, train_rl, train_sft
from minitepo.lab.runs import read_metrics

ROOT = Path(__file__).resolve().parents[1]

PROMISED = ("Tokenizer GPT ModelConfig make_task sample SamplerConfig Rollout score_rollout collect_rollout "
            "group_advantages OBJECTIVES grpo_loss dapo_loss tepo_loss aggregate step_normalizer tepo_mask "
            "TEPO_MASK_TOL").split()
PROMISED_BY_THE_LAB = "SFTConfig train_sft RLConfig train_rl plot_runs".split()


def test_every_promised_name_is_importable_from_the_package():
    missing = [name for name in PROMISED if not hasattr(minitepo, name)]
    assert not missing
    assert set(PROMISED) <= set(minitepo.__all__)
    import minitepo.lab as lab
    missing = [name for name in PROMISED_BY_THE_LAB if not hasattr(lab, name)]
    assert not missing
    assert set(PROMISED_BY_THE_LAB) <= set(lab.__all__)


def readme_snippet() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## One RL step by hand", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readmes_one_rl_step_by_hand_runs_as_written_in_at_most_15_lines(capsys):
    code = readme_snippet()
    assert len(code.strip().splitlines()) <= 15
    imports = [line for line in code.splitlines() if "import" in line]
    assert all(line.startswith(("import random, torch", "from minitepo import ")) for line in imports), imports
    scope: dict = {}
    exec(compile(code, "README snippet", "exec"), scope)
    out = capsys.readouterr().out
    assert re.fullmatch(r"reward [0-9.]+  loss [+-][0-9.]+  mask 0\.00\n", out), out
    assert all(torch.isfinite(p).all() for p in scope["model"].parameters())


def module_imports() -> dict[str, set[str]]:
    graph = {}
    for path in (ROOT / "minitepo").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = name if parts[-1] == "__init__" else name.rsplit(".", 1)[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                deps.add(target)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        graph[name] = {d for d in deps if d.startswith("minitepo") and d != "minitepo"}
    return graph


def test_no_module_of_minitepo_imports_itself_back_through_a_cycle():
    graph = module_imports()
    state: dict[str, int] = {}

    def visit(node, path):
        state[node] = 1
        for dep in graph.get(node, ()):
            if state.get(dep) == 1:
                raise AssertionError(" -> ".join(path + [dep]))
            if dep in graph and not state.get(dep):
                visit(dep, path + [dep])
        state[node] = 2

    for module in graph:
        if not state.get(module):
            visit(module, [module])


def test_the_rl_module_stays_short_enough_to_read():
    assert len((ROOT / "minitepo" / "rl.py").read_text().splitlines()) <= 430  # the iteration and its metrics record


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    tokenizer = Tokenizer()
    return tokenizer, GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=1, n_head=2, n_embd=32))


@pytest.mark.parametrize("prompts, expected", [
    (["1+2="], "list of token ids"),
    ("1+2=", "non-empty list of token-id lists"),
    ([[1, 2, 999]], "not a token id in [0, "),
    ([[1, -1]], "not a token id in [0, "),
    ([[]], "non-empty list of token ids"),
    ([], "non-empty list of token-id lists"),
])
def test_sample_refuses_prompts_that_are_not_token_id_lists_in_the_vocabulary(tiny, prompts, expected):
    tokenizer, model = tiny
    with pytest.raises(ValueError, match=re.escape(expected)):
        sample(model, prompts, group_size=2, eos_id=tokenizer.eos_id, pad_id=tokenizer.pad_id,
               config=SamplerConfig(max_new_tokens=3))


def test_collect_rollout_scores_every_response_with_the_tasks_verifier_and_records_its_temperature(tiny):
    tokenizer, model = tiny
    task = make_task("add", levels=(1,))
    examples = [task.sample(random.Random(i)) for i in range(3)]
    rollout = collect_rollout(model, tokenizer, task, examples, group_size=4, temperature=0.7,
                              generator=torch.Generator().manual_seed(0))
    assert rollout.temperature == 0.7 and rollout.rewards.shape == rollout.correct.shape == (12,)
    texts = [tokenizer.decode(row[:n]) for row, n in zip(rollout.response_ids.tolist(), rollout.lengths.tolist())]
    for i, text in enumerate(texts):
        reward, info = task.reward(examples[i // 4].prompt, text)
        assert rollout.rewards[i].item() == reward and bool(rollout.correct[i]) == info["correct"]
    # score_rollout defaults to the rollout's own temperature, so the ratio to the sampler is 1
    with torch.no_grad():
        logp, _ = score_rollout(model, rollout)
    assert torch.allclose(logp * rollout.mask, rollout.old_logp, atol=1e-5)


def test_collect_rollout_refuses_strings_instead_of_examples(tiny):
    tokenizer, model = tiny
    with pytest.raises(ValueError, match="Example objects"):
        collect_rollout(model, tokenizer, make_task("add"), ["1+2="], group_size=2)


def test_tepo_mask_is_the_mask_tepo_loss_penalises():
    g = torch.Generator().manual_seed(3)
    B, T = 6, 5
    mask = torch.rand(B, T, generator=g) < 0.8
    adv = torch.randn(B, generator=g)
    entropy, old_entropy = torch.rand(B, T, generator=g), torch.rand(B, T, generator=g)
    M = tepo_mask(adv, mask, entropy=entropy, old_entropy=old_entropy)
    expected = (adv[:, None] > 0) & (entropy < old_entropy) & mask
    assert torch.equal(M, expected)
    logp = torch.randn(B, T, generator=g)
    _, stats = tepo_loss(logp=logp, old_logp=logp - 0.1, advantages=adv, mask=mask, entropy=entropy,
                         old_entropy=old_entropy)
    assert stats["mask_frac"].item() == pytest.approx(M.sum().item() / mask.sum().item())
    # the round-off guard: a drop smaller than the tolerance does not count
    tiny_drop = tepo_mask(torch.ones(1), torch.ones(1, 1, dtype=torch.bool), entropy=torch.tensor([[1.0 - 1e-6]]),
                          old_entropy=torch.tensor([[1.0]]), tol=TEPO_MASK_TOL)
    assert not tiny_drop.any()


def test_train_sft_and_train_rl_accept_an_in_memory_model_and_tuple_levels(tmp_path):
    torch.manual_seed(0)
    tokenizer = Tokenizer()
    model = GPT(ModelConfig(vocab_size=tokenizer.vocab_size, n_layer=1, n_head=2, n_embd=32))
    before = [p.detach().clone() for p in model.parameters()]
    train_sft(SFTConfig(task="add", levels=(1,), steps=3, batch_size=8, eval_every=3, device="cpu",
                        out=str(tmp_path / "sft"), progress=False), model=model, tokenizer=tokenizer)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters())), "trained in place"
    result = train_rl(RLConfig(task="add", levels=(1,), iterations=2, prompts=2, group_size=2, minibatches=1,
                               pass_k=0, eval_every=1, device="cpu", out=str(tmp_path / "rl"), progress=False),
                      model=model, tokenizer=tokenizer)
    assert result["iterations"] == 2
    assert read_metrics(tmp_path / "rl")[-1]["step"] == 2


def test_an_in_memory_model_needs_its_task_named():
    model = GPT(ModelConfig(vocab_size=Tokenizer().vocab_size, n_layer=1, n_head=2, n_embd=32))
    with pytest.raises(ValueError, match="no task given"):
        train_rl(RLConfig(device="cpu", progress=False), model=model)
