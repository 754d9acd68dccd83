"""Bad input raises a ValueError that says what is wrong; junk where the mask is 0 is never an error.

STYLE.md, "errors that teach": a mismatched shape, a mask that is not 0/1 (or is an integer
tensor), a NaN at a real token, or an unknown name must fail at the call with a clear message --
never deep inside torch, never as a silent NaN loss. Padding, on the other hand, may hold anything
(NaN, +-inf, +-1e4): the loss and every gradient must ignore it.
"""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import loss_oracles as oracle
from loss_strategies import DTYPE, OBJECTIVE_NAMES, accepts, batches, examples, fill_masked, library, run

B, T = 3, 4


def _good():
    g = torch.Generator().manual_seed(0)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.bool)
    return dict(
        logp=-torch.rand(B, T, generator=g, dtype=DTYPE),
        old_logp=-torch.rand(B, T, generator=g, dtype=DTYPE),
        ref_logp=-torch.rand(B, T, generator=g, dtype=DTYPE),
        entropy=torch.rand(B, T, generator=g, dtype=DTYPE) + 0.1,
        old_entropy=torch.rand(B, T, generator=g, dtype=DTYPE) + 0.1,
        entropy_drop_score=torch.randn(B, T, generator=g, dtype=DTYPE),
        advantages=torch.tensor([1.0, -0.5, 0.0], dtype=DTYPE),
        mask=mask,
    )


def _kwargs(name, **changes):
    """A valid call of objective `name`, with `changes` applied (tensors it does not read are left out)."""
    t = _good()
    adv = t["advantages"] if name != "gtpo" else t["advantages"][:, None].expand(B, T).clone()  # GTPO: per token
    kw = dict(logp=t["logp"], old_logp=t["old_logp"], advantages=adv, mask=t["mask"])
    if name == "grpo":
        kw["ref_logp"] = t["ref_logp"]
    if name == "tepo":
        kw.update(entropy=t["entropy"], old_entropy=t["old_entropy"])
    if name in ("dr_grpo",) and accepts(name, "max_len"):
        kw["max_len"] = 6
    kw.update(changes)
    return kw


def _call(name, **changes):
    return getattr(library(), f"{name}_loss")(**_kwargs(name, **changes))


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
def test_a_valid_call_returns_a_scalar_loss_and_stats(name):
    loss, stats = _call(name)
    assert loss.dim() == 0 and torch.isfinite(loss)
    for key in ("clip_frac", "ratio_mean", "approx_kl_old"):
        assert key in stats, f"{name} stats lack {key!r}"
    for key, value in stats.items():  # scalars for a logger, never part of the graph
        assert not (isinstance(value, torch.Tensor) and (value.requires_grad or value.dim() != 0)), key
    if name in ("gspo", "tepo"):
        assert "seq_ratio_mean" in stats
    if name == "tepo":
        assert "mask_frac" in stats


# --------------------------------------------------------------------------- shapes


def _bad_shapes(name):
    t = _good()
    cases = {
        "old_logp": t["old_logp"][:, :-1],
        "mask": t["mask"][:, :-1],
        "advantages (B+1,)": torch.zeros(B + 1, dtype=DTYPE),
        "advantages (B, T+1)": torch.zeros(B, T + 1, dtype=DTYPE),
        "logp (B, T, 1)": t["logp"][..., None],
    }
    if name == "grpo":
        cases["ref_logp"] = t["ref_logp"][:2]
    if name == "tepo":
        cases["old_entropy"] = t["old_entropy"][:, :2]
    return cases


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
def test_mismatched_shapes_are_a_clear_value_error(name):
    for what, bad in _bad_shapes(name).items():
        key = what.split(" ")[0]
        with pytest.raises(ValueError) as info:
            _call(name, **{key: bad})
        assert "shape" in str(info.value).lower() or key.split(" ")[0] in str(info.value), \
            f"{name}: the error for a bad {what} does not say what is wrong: {info.value}"


# --------------------------------------------------------------------------- the mask


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
@pytest.mark.parametrize("bad", ["half", "two", "minus one"])
def test_a_mask_that_is_not_zero_or_one_is_a_value_error(name, bad):
    mask = _good()["mask"].to(DTYPE)
    mask[0, 0] = {"half": 0.5, "two": 2.0, "minus one": -1.0}[bad]
    with pytest.raises(ValueError, match="(?i)mask"):
        _call(name, mask=mask)


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_an_integer_mask_is_a_value_error(name, dtype):
    """Only bool or floating 0/1 masks: an int mask is most often token ids passed by mistake."""
    with pytest.raises(ValueError, match="(?i)mask"):
        _call(name, mask=_good()["mask"].to(dtype))


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
def test_a_float_mask_and_a_bool_mask_give_the_same_loss(name):
    a, _ = _call(name)
    b, _ = _call(name, mask=_good()["mask"].to(DTYPE))
    torch.testing.assert_close(a, b, rtol=0, atol=0)


# --------------------------------------------------------------------------- NaN


def _nan_cases(name):
    cases = ["logp", "old_logp", "advantages"]
    if name == "grpo":
        cases.append("ref_logp")
    if name == "tepo":
        cases += ["entropy", "old_entropy"]
    return cases


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
def test_nan_at_a_real_token_is_a_value_error(name):
    for key in _nan_cases(name):
        bad = _kwargs(name)[key].clone()
        bad.view(-1)[0] = float("nan")  # position (0, 0), or A_0: always real
        with pytest.raises(ValueError, match="(?i)nan"):
            _call(name, **{key: bad})


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
@settings(max_examples=examples(10))
@given(batch=batches(), token_level=st.booleans(),
       junk=st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e4, -1e4]))
def test_nan_inf_or_huge_values_at_masked_positions_never_reach_the_loss_or_any_gradient(name, batch, token_level,
                                                                                       junk):
    """Padding may hold anything -- a padded logp of -inf is common -- and changes nothing."""
    hp = {}
    clean = batch.map_tokens(lambda x: fill_masked(x, batch.mask, 0.0) if x is not batch.mask else x)
    dirty = batch.map_tokens(lambda x: fill_masked(x, batch.mask, junk) if x is not batch.mask else x)
    a, b = run(name, clean, token_level, **hp), run(name, dirty, token_level, **hp)
    assert torch.isfinite(b.loss)
    torch.testing.assert_close(b.loss, a.loss, rtol=1e-12, atol=0)
    for key in a.grads:
        assert torch.isfinite(b.grads[key]).all(), f"junk reached the gradient w.r.t. {key}"
        torch.testing.assert_close(b.grads[key], a.grads[key], rtol=1e-12, atol=0)


def test_a_log_ratio_beyond_twenty_is_clamped_to_a_finite_loss_and_gradient():
    """exp(50) is not an overflow in float64, but the spec clamps log-ratios to [-20, 20] before exp."""
    t = _good()
    old = t["logp"] - torch.tensor([[50.0, 0, 0, 0], [-50.0, 0, 0, 0], [0, 0, 0, 0]], dtype=DTYPE)
    for name in OBJECTIVE_NAMES:
        for adv in (torch.tensor([1.0, -1.0, 0.5], dtype=DTYPE), torch.tensor([-1.0, 1.0, 0.5], dtype=DTYPE)):
            if name == "gtpo":
                adv = adv[:, None].expand(B, T).clone()
            kw = _kwargs(name, old_logp=old, advantages=adv)
            kw["logp"] = kw["logp"].clone().requires_grad_(True)
            loss, _ = getattr(library(), f"{name}_loss")(**kw)
            loss.backward()
            assert torch.isfinite(loss) and torch.isfinite(kw["logp"].grad).all(), name
            if name in ("dapo", "gtpo", "grpo_s"):
                L = {k: v.detach().tolist() for k, v in kw.items() if isinstance(v, torch.Tensor)}
                want, _ = oracle.dapo_loss(L["logp"], L["old_logp"], L["advantages"], _good()["mask"].tolist())
                assert float(loss.detach()) == pytest.approx(want, rel=1e-12)


# --------------------------------------------------------------------------- names


def test_an_unknown_objective_name_is_a_value_error_that_lists_the_names():
    lib = library()
    with pytest.raises(ValueError) as info:
        lib.get_objective("ppo")
    for name in ("grpo", "dapo", "tepo"):
        assert name in str(info.value)


def test_every_registered_objective_is_one_of_the_documented_functions():
    lib = library()
    functions = {getattr(lib, f"{n}_loss") for n in OBJECTIVE_NAMES}
    assert set(lib.OBJECTIVES.values()) <= functions
    core = {getattr(lib, f"{n}_loss") for n in ("grpo", "dapo", "dr_grpo", "gspo", "tepo")}
    assert core <= set(lib.OBJECTIVES.values())
    for key, fn in lib.OBJECTIVES.items():
        assert lib.get_objective(key) is fn


def test_the_vocabulary_of_aggregation_modes_and_kl_kinds():
    lib = library()
    assert tuple(lib.AGG_MODES) == oracle.AGG_MODES
    assert {"k1", "k2", "k3"} <= set(lib.KL_KINDS)


@pytest.mark.parametrize("name", [n for n in OBJECTIVE_NAMES])
def test_an_unknown_aggregation_mode_is_a_value_error_that_lists_the_modes(name):
    if not accepts(name, "agg"):
        pytest.skip(f"{name} has a fixed aggregation")
    with pytest.raises(ValueError, match="token-mean"):
        _call(name, agg="token_mean")


def test_aggregate_rejects_an_unknown_mode_and_a_mismatched_mask():
    lib = library()
    x, mask = torch.zeros(2, 3, dtype=DTYPE), torch.ones(2, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match="seq-mean-token-mean"):
        lib.aggregate(x, mask, "mean")
    with pytest.raises(ValueError):
        lib.aggregate(x, mask[:, :2], "token-mean")


def test_unknown_kl_kinds_and_mask_switches_are_value_errors():
    lib = library()
    x = torch.zeros(2, 3, dtype=DTYPE)
    with pytest.raises(ValueError, match="k3"):
        lib.kl_penalty(x, x, "k4")
    with pytest.raises(ValueError):
        _call("grpo", kl_kind="k4")
    with pytest.raises(ValueError):
        _call("tepo", mask_kl="k4")
    with pytest.raises(ValueError, match="measured"):
        _call("tepo", mask_criterion="guess")


def test_tepo_asks_for_what_its_mask_criterion_reads():
    t = _good()
    with pytest.raises(ValueError, match="(?i)entrop"):
        _call("tepo", entropy=None, old_entropy=None)
    with pytest.raises(ValueError, match="(?i)entropy_drop_score|score"):
        _call("tepo", mask_criterion="predicted", entropy=None, old_entropy=None)
    loss, _ = _call("tepo", mask_criterion="predicted", entropy=None, old_entropy=None,
                    entropy_drop_score=t["entropy_drop_score"])
    assert torch.isfinite(loss)


def test_a_kl_coefficient_without_a_reference_is_a_value_error():
    """beta > 0 with no ref_logp would silently drop the KL term: refuse instead."""
    with pytest.raises(ValueError, match="ref_logp"):
        _call("grpo", ref_logp=None)
    with pytest.raises(ValueError, match="ref_logp"):
        _call("dapo", beta=0.1)


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"])
def test_step_normalizer_is_exactly_what_aggregate_divides_by_when_none_is_given(mode):
    from minitepo.losses import aggregate, step_normalizer

    torch.manual_seed(0)
    x = torch.randn(5, 7, dtype=torch.float64)
    mask = torch.rand(5, 7) < 0.6
    mask[2] = False  # an empty row counts in C = B * L_max but not in B'
    expected = {"token-mean": mask.sum().item(), "seq-mean-token-mean": 4, "seq-mean-token-sum": 4,
                "seq-mean-token-sum-norm": 5 * 9}[mode]
    assert step_normalizer(mask, mode, max_len=9) == expected
    assert torch.equal(aggregate(x, mask, mode, max_len=9),
                       aggregate(x, mask, mode, normalizer=step_normalizer(mask.float(), mode, max_len=9)))


@pytest.mark.parametrize("name", ["grpo", "tepo", "gspo"])
@pytest.mark.parametrize("bad", [0, -3.0, float("nan"), float("inf"), "many", True])
def test_a_bad_normalizer_is_refused_in_one_line_that_names_it(name, bad):
    """An aggregation's normalizer (the step's N, B' or C) must be a finite number > 0: anything else, a string
    included, gets the same clear message rather than a float() error or a silently wrong loss."""
    with pytest.raises(ValueError, match=r"normalizer must be a finite number > 0, got "):
        _call(name, normalizer=bad)
