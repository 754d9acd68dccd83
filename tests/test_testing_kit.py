"""minitepo.testing, the property-testing kit: it passes minitepo's objectives, it catches planted bugs with a
small shrunk counter-example, it explains a signature it cannot call, it writes nothing into the working directory
unless a database path is given, and ``minitepo check-loss`` exits 0 / 1 / 2 for holds / violated / no verdict
(tests/test_check_loss_cli.py tests every exit path)."""
import subprocess
import sys
import textwrap

import pytest

import minitepo.testing as kit
from minitepo.lab.cli import main
from minitepo.losses import OBJECTIVES, dapo_loss
from minitepo.testing import known_bugs


@pytest.mark.parametrize("name", list(OBJECTIVES))
def test_every_invariant_that_applies_holds_for_minitepos_own_objective(name):
    findings = kit.check_loss(kit.objective(name), like=name, seed=0)
    assert findings and all(f.holds for f in findings), kit.format_findings(findings)
    if name == "tepo":
        assert "mask containment" in {f.property for f in findings}


# --------------------------------------------------------------------------- planted bugs, each caught


def per_micro_batch_dapo(logp, old_logp, advantages, mask):
    """DAPO that ignores the step: each micro-batch divides by its own token count (the classic bug)."""
    own = max(float(mask.bool().sum()), 1.0)
    return dapo_loss(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask, normalizer=own)[0]


@pytest.mark.parametrize("loss, check, expected", [
    (per_micro_batch_dapo, kit.check_micro_batches, "summed micro-batch loss vs full-step loss"),
    (known_bugs.width_mean_tepo, kit.check_padding_columns, "after adding padding columns"),
    (known_bugs.exp_then_mask, kit.check_masked_junk, "the loss is nan"),
    (known_bugs.mask_by_multiplying, kit.check_masked_junk, "the loss is nan"),   # only -inf / NaN junk shows it
    (known_bugs.entropy_weighted, kit.check_constants, "gradient flowed into entropy"),
    (per_micro_batch_dapo, lambda loss, **kw: kit.check_on_policy_weights(loss, agg="seq-mean-token-mean", **kw),
     "on-policy gradient vs -A_i w_i"),
])
def test_a_planted_bug_is_caught_with_a_small_shrunk_example_and_its_numbers(loss, check, expected):
    with pytest.raises(kit.InvariantViolation) as caught:
        check(kit.as_kit_loss(loss), seed=0, max_examples=30)
    message = str(caught.value)
    assert expected in message, message
    assert "example:\nB=" in message, message
    B = int(message.split("example:\nB=")[1].split()[0])
    assert B <= 4, f"the shrunk example should be small, got B={B}:\n{message}"


def test_the_same_seed_gives_the_same_shrunk_example():
    runs = []
    for _ in range(2):
        with pytest.raises(kit.InvariantViolation) as caught:
            kit.check_micro_batches(kit.as_kit_loss(per_micro_batch_dapo), seed=3, max_examples=20)
        runs.append(str(caught.value))
    assert runs[0] == runs[1]


def test_nothing_is_written_to_the_working_directory_unless_a_database_is_asked_for(tmp_path):
    """A fresh process (hypothesis picks its storage folder from the working directory at import). With a database
    path, that folder and nothing else appears: no .hypothesis/ beside it."""
    code = textwrap.dedent('''
        import sys, minitepo.testing as kit
        from minitepo.losses import dapo_loss

        def per_micro(logp, old_logp, advantages, mask):
            own = max(float(mask.bool().sum()), 1.0)
            return dapo_loss(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask, normalizer=own)[0]

        for database in (None, sys.argv[1] if len(sys.argv) > 1 else None):
            try:
                kit.check_micro_batches(kit.as_kit_loss(per_micro), max_examples=20, database=database)
            except kit.InvariantViolation:
                pass
    ''')
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True)
    assert list(tmp_path.iterdir()) == [], "the kit wrote into the working directory"
    subprocess.run([sys.executable, "-c", code, "db"], cwd=tmp_path, check=True)
    assert (tmp_path / "db").is_dir(), "database=PATH keeps the failing examples there"
    assert [p.name for p in tmp_path.iterdir()] == ["db"], "only the database asked for"


# --------------------------------------------------------------------------- signatures


def test_a_callable_with_a_signature_the_kit_cannot_call_gets_an_error_naming_the_conventions():
    def odd(x, y):
        return x

    with pytest.raises(kit.SignatureError, match=r"odd\(x, y\) fits no convention.*loss\(batch, step"):
        kit.as_kit_loss(odd)
    with pytest.raises(kit.SignatureError, match="verl_policy_loss"):
        kit.as_kit_loss(lambda old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config: 0)
    with pytest.raises(kit.SignatureError, match=r"no parameter for mask -> 'response_mask'"):
        kit.keywords(lambda logp, old_logp, advantages, mask: 0, mask="response_mask")
    with pytest.raises(kit.SignatureError, match="not callable"):
        kit.as_kit_loss(3)


def test_keywords_maps_another_frameworks_names_in_one_line():
    def theirs(log_prob, old_log_prob, advantages, response_mask):
        return dapo_loss(logp=log_prob, old_logp=old_log_prob, advantages=advantages, mask=response_mask)

    loss = kit.keywords(theirs, logp="log_prob", old_logp="old_log_prob", mask="response_mask")
    assert all(f.holds for f in kit.check_loss(loss, like="dapo", only=["permutation", "on-policy weights"], seed=0))


def test_a_loss_that_raises_is_a_violation_that_says_what_it_raised_and_on_which_batch():
    def broken(batch, step):
        raise RuntimeError("shape mismatch somewhere deep")

    with pytest.raises(kit.InvariantViolation, match=r"(?s)the loss raised RuntimeError: shape mismatch.*example:\nB="):
        kit.check_permutation(broken, max_examples=3, seed=0)


def test_importing_minitepo_does_not_import_the_kit_or_hypothesis():
    code = "import sys, minitepo; print('minitepo.testing' in sys.modules, 'hypothesis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"], out


def test_without_hypothesis_the_kit_says_to_install_it():
    code = ("import sys; sys.modules['hypothesis'] = None\n"
            "try:\n    import minitepo.testing\nexcept ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install hypothesis" in out, out


# --------------------------------------------------------------------------- the command


GOOD_AND_BAD = textwrap.dedent('''
    import torch
    from minitepo.losses import dapo_loss


    def good(logp, old_logp, advantages, mask, normalizer=None):
        return dapo_loss(logp=logp, old_logp=old_logp, advantages=advantages, mask=mask, normalizer=normalizer)


    def good_kit(batch, step):
        norm = None if step is None else step.normalizer("token-mean")
        return dapo_loss(logp=batch.logp, old_logp=batch.old_logp, advantages=batch.seq_adv, mask=batch.mask,
                         normalizer=norm)


    def bad(logp, old_logp, advantages, mask):
        m = mask.to(logp.dtype)
        return -(torch.exp(logp - old_logp) * advantages[:, None] * m).sum() / m.sum()


    def odd(x):
        return x
''')


@pytest.fixture
def losses_file(tmp_path, monkeypatch, capsys):
    path = tmp_path / "my_losses.py"
    path.write_text(GOOD_AND_BAD)
    monkeypatch.chdir(tmp_path)
    return path


def test_check_loss_exits_0_when_every_property_holds(losses_file, capsys):
    assert main(["check-loss", "my_losses:good_kit", "--like", "dapo", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "micro-batches" in out and "VIOLATED" not in out and "properties hold" in out
    assert main(["check-loss", str(losses_file) + ":good_kit", "--like", "dapo", "--only", "permutation"]) == 0


def test_check_loss_exits_1_and_prints_the_shrunk_example_when_a_property_is_violated(losses_file, capsys):
    # `bad` masks after exp: junk at padding becomes NaN
    assert main(["check-loss", "my_losses:bad", "--like", "dapo", "--seed", "0"]) == 1
    out = capsys.readouterr().out
    assert "masked junk" in out and "VIOLATED" in out and "minimal failing example" in out and "example:\nB=" in out
    assert [p.name for p in losses_file.parent.iterdir()] == ["my_losses.py"]   # no .hypothesis/, no __pycache__


@pytest.mark.parametrize("spec, message", [
    ("my_losses", "MODULE:FUNCTION"),
    ("no_such_module:f", "cannot import 'no_such_module'"),
    ("my_losses:missing", "has no attribute 'missing'"),
    ("my_losses:odd", "fits no convention"),
    ("nowhere.py:f", "no file 'nowhere.py'"),
])
def test_check_loss_exits_2_on_a_bad_spec_with_one_line_saying_why(losses_file, capsys, spec, message):
    assert main(["check-loss", spec, "--like", "dapo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("minitepo check-loss: error:") and message in err, err


def test_check_loss_refuses_an_unknown_family_and_property(losses_file, capsys):
    with pytest.raises(SystemExit) as e:
        main(["check-loss", "my_losses:good", "--like", "ppo"])
    assert e.value.code == 2
    assert main(["check-loss", "my_losses:good", "--like", "dapo", "--only", "nonsense"]) == 2
    err = capsys.readouterr().err
    assert "unknown property 'nonsense'" in err and "allowed: permutation, masked junk" in err
