"""The chain-of-thought mask analysis: token roles of an add_cot answer, and the counts behind its figure."""


from minitepo.lab.mask_tokens import ROLES, MaskTokensConfig, cot_roles, mask_hits, plot_mask_hits
from minitepo.lab.sft_run import SFTConfig, train_sft


def test_every_token_of_a_well_formed_add_cot_answer_gets_its_role():
    chars = list("8+7+0=15;5+6+1=12:125") + ["<eos>"]
    roles = cot_roles(chars)
    assert roles[:9] == ["operand", "separator", "operand", "separator", "carry", "separator", "column sum",
                         "column sum", "separator"]
    assert roles[17] == "separator" and roles[18:21] == ["final answer"] * 3 and roles[21] == "eos"
    assert cot_roles(list("8+7")) == ["other"] * 3                    # a broken step is "other", never a crash
    assert cot_roles(list(":12")) == ["separator", "final answer", "final answer"]


def test_mask_hits_counts_every_real_token_after_the_first_step_and_draws_the_figure(tmp_path):
    train_sft(SFTConfig(task="add_cot", levels="1", steps=40, batch_size=16, eval_every=40, n_layer=1, n_head=2,
                        n_embd=32, device="cpu", out=str(tmp_path / "ws"), progress=False))
    config = MaskTokensConfig(init=str(tmp_path / "ws" / "checkpoint.pt"), prompts=4, group_size=4, minibatches=2,
                              device="cpu", out=str(tmp_path / "mask.png"))
    result = mask_hits(config)
    assert set(result["hits"]) == set(ROLES)
    assert all(0 <= hit <= seen for hit, seen in result["hits"].values())
    assert sum(seen for _, seen in result["hits"].values()) > 0       # the second mini-batch's tokens were counted
    assert plot_mask_hits(result, config.out).stat().st_size > 0
