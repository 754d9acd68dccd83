"""``minitepo check-loss``'s exit paths: 0 every property holds, 1 one is violated, 2 no verdict on the loss (one
line on stderr, no traceback); ``--list``, ``--json``, ``--skip``, ``--normalizer-arg``; a ``.py`` path is loaded
by its path; how the kit calls a loss depends on its signature, never on its name."""
import json
import textwrap

import pytest

from minitepo.lab.cli import main

LOSSES = textwrap.dedent('''
    import torch
    from minitepo.losses import dapo_loss


    def dapo(logp, old_logp, advantages, mask, norm=None):
        """DAPO in keyword form; `norm` is the step's token count when it runs on a micro-batch."""
        return dapo_loss(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask, normalizer=norm)[0]


    def dapo_loss_named(logp, old_logp, advantages, mask, agg="token-mean"):
        """The same body under a name that looks like minitepo's: it must be called the same way."""
        return dapo_loss(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask, agg=agg)[0]


    def per_response_mean(logp, old_logp, advantages, mask):
        return dapo_loss(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask, agg="seq-mean-token-mean")[0]


    def mask_by_multiplying(logp, old_logp, advantages, mask):
        m = mask.to(logp.dtype)
        ratio = torch.exp((logp - old_logp) * m)                  # -inf * 0 = NaN at padding
        return -(ratio * advantages[:, None] * m).sum() / m.sum()


    def crashes(logp, old_logp, advantages, mask):
        return logp @ mask                                        # (B, T) @ (B, T): never runs


    def returns_a_vector(logp, old_logp, advantages, mask):
        return logp.sum(-1)
''')


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "copy.py").write_text(LOSSES)                   # named like the standard library's copy
    (tmp_path / "raises_at_import.py").write_text("raise RuntimeError('no GPU found')\n")
    (tmp_path / "needs_a_package.py").write_text("import package_that_is_not_installed\n")
    (tmp_path / "broken_syntax.py").write_text("def f(:\n    pass\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *argv):
    code = main(["check-loss", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_py_path_is_loaded_by_its_path_and_nothing_is_written_next_to_it(workdir, capsys):
    code, out, err = run(capsys, "sub/copy.py:dapo", "--like", "dapo", "--normalizer-arg", "norm", "--only",
                         "micro-batches,on-policy weights", "--seed", "0")
    assert code == 0, out + err                                          # not the standard library's copy module
    assert "micro-batches" in out and "in 'norm'" in out and "2 of 2 properties hold" in out
    written = sorted(p.name for p in workdir.rglob("*"))
    assert written == ["broken_syntax.py", "copy.py", "needs_a_package.py", "raises_at_import.py", "sub"], \
        "no __pycache__, no .hypothesis"


def test_exit_1_names_the_violated_property_and_its_shrunk_example(workdir, capsys):
    code, out, err = run(capsys, "sub/copy.py:mask_by_multiplying", "--like", "dapo", "--only", "masked junk",
                         "--seed", "0")
    assert code == 1
    assert "masked junk" in out and "VIOLATED" in out and "the loss is nan" in out and "example:\nB=" in out
    assert "-inf" in out or "nan" in out.split("junk:")[1], "the junk that broke it is a non-finite one"


@pytest.mark.parametrize("argv, reason", [
    (["raises_at_import.py:f"], "cannot import 'raises_at_import.py': RuntimeError: no GPU found"),
    (["raises_at_import:f"], "cannot import 'raises_at_import': RuntimeError: no GPU found"),
    (["needs_a_package:f"], "No module named 'package_that_is_not_installed'"),
    (["broken_syntax.py:f"], "SyntaxError: invalid syntax (broken_syntax.py, line 1)"),
    (["sub/copy.py:crashes"], "cannot run on a plain batch"),
    (["sub/copy.py:returns_a_vector"], "must return a scalar tensor"),
    (["sub/copy.py:dapo", "--only", "mask containment"], "'mask containment' does not apply to dapo"),
    (["sub/copy.py:dapo", "--only", "clip", "--skip", "clip"], "leave no property to run for dapo"),
    (["sub/copy.py:dapo", "--skip", "nonsense"], "unknown property 'nonsense'"),
    (["sub/copy.py:dapo", "--normalizer-arg", "n"], "has no parameter 'n' to take the step's normaliser"),
    (["copy:dapo"], "has no attribute 'dapo'"),
    (["--like", "dapo"], "name the loss to check"),
])
def test_exit_2_is_one_line_saying_why_there_is_no_verdict(workdir, capsys, argv, reason):
    argv = argv if "--like" in argv else [*argv, "--like", "dapo"]
    code, out, err = run(capsys, *argv)
    assert code == 2, out + err
    assert err.startswith("minitepo check-loss: error:") and reason in err, err
    assert err.count("\n") == 1 and "Traceback" not in err and "VIOLATED" not in out, err


def test_exit_2_without_a_family_and_for_an_unknown_one(workdir, capsys):
    code, _, err = run(capsys, "sub/copy.py:dapo")
    assert code == 2 and "--like FAMILY is required" in err, err
    with pytest.raises(SystemExit) as e:
        main(["check-loss", "sub/copy.py:dapo", "--like", "ppo"])
    assert e.value.code == 2


def test_list_names_every_property_with_its_meaning(capsys):
    from minitepo.testing import INVARIANTS
    code, out, _ = run(capsys, "--list")
    assert code == 0
    for inv in INVARIANTS:
        assert inv.name in out and inv.sentence in out, inv.name
    assert "all but gtpo, grpo_s" in out and "not seq-mean-token-sum-norm" in out


def test_json_holds_every_verdict_and_skip_leaves_a_property_out(workdir, capsys):
    code, out, _ = run(capsys, "sub/copy.py:per_response_mean", "--like", "dapo", "--json", "--seed", "0",
                       "--skip", "masked junk,micro-batches,equal-micro-batches,token_order,constants,clip")
    report = json.loads(out)
    assert code == 1 and report["holds"] is False and report["agg"] == "token-mean"
    names = [p["property"] for p in report["properties"]]
    assert names == ["permutation", "padding columns", "empty response", "zero advantage", "on-policy weights"]
    assert report["violated"] == ["on-policy weights"]
    bad, = [p for p in report["properties"] if not p["holds"]]
    assert bad["example"].startswith("on-policy gradient vs -A_i w_i (token-mean)") and "example:\nB=" in bad["example"]
    assert bad["hints"] and "check it with --agg seq-mean-token-mean" in bad["hints"][0]
    assert all(p["spec"] and p["meaning"] and (p["example"] is None) == p["holds"] for p in report["properties"])


def test_the_wrapper_depends_on_the_signature_not_the_name(workdir, capsys):
    """A body named like minitepo's objective is called as any keyword loss: both fail micro-batches the same
    way, and the message says the loss cannot receive the step's normaliser."""
    outs = []
    for name in ("dapo_loss_named", "dapo"):
        code, out, _ = run(capsys, f"sub/copy.py:{name}", "--like", "dapo", "--only", "micro-batches", "--seed", "0")
        assert code == 1, out
        assert "no parameter takes the step's normaliser" in out
        assert "hint: the loss cannot receive the step's normaliser" in out and "--normalizer-arg NAME" in out
        outs.append(out.replace("dapo_loss_named", "dapo"))
    assert outs[0] == outs[1]
