"""Checkpoints: written atomically, loaded as plain data, and refused with a clear reason when wrong.

A crash mid-write is simulated by making ``torch.save`` fail after it has written some bytes; the
previous checkpoint must survive untouched and no temporary file may be left behind.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

import pytest
import torch

from minitepo.lab.checkpoint import load_model
from minitepo.lab.checkpoint import (FORMAT, VERSION, CheckpointError, load_checkpoint, rng_state,
                                 save_checkpoint, set_rng_state)
from minitepo.lab.sft_run import SFTConfig, train_sft
from minitepo.model import GPT, ModelConfig
from minitepo.tokenizer import Tokenizer
from toy_tasks.alphabet import ALPHABET

TOK = Tokenizer()


def tiny_model(n_embd: int = 16) -> GPT:
    torch.manual_seed(0)
    return GPT(ModelConfig(vocab_size=TOK.vocab_size, n_layer=1, n_head=2, n_embd=n_embd, max_seq_len=32))


def payload(model: GPT, **extra) -> dict:
    return {"step": 7, "model_config": model.config.to_dict(), "model": model.state_dict(),
            "alphabet": TOK.alphabet, **extra}


@pytest.fixture(scope="module")
def sft_checkpoint(tmp_path_factory):
    out = tmp_path_factory.mktemp("sft")
    train_sft(SFTConfig(task="add", levels="1", steps=2, batch_size=4, eval_every=2, n_layer=1, n_head=2,
                        n_embd=16, device="cpu", out=str(out), progress=False))
    return out / "checkpoint.pt"


# ---- atomic writes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("crash", [RuntimeError("disk full"), KeyboardInterrupt()])
def test_a_write_that_dies_midway_leaves_the_previous_checkpoint_intact_and_no_temp_file(tmp_path, monkeypatch, crash):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, payload(tiny_model(), step=1))
    before = path.read_bytes()

    def dies_midway(obj, f, *args, **kwargs):
        f.write(b"half a checkpoint")
        raise crash

    monkeypatch.setattr(torch, "save", dies_midway)
    with pytest.raises(type(crash)):
        save_checkpoint(path, payload(tiny_model(), step=2))
    monkeypatch.undo()

    assert path.read_bytes() == before
    assert load_checkpoint(path)["step"] == 1
    assert sorted(os.listdir(tmp_path)) == ["checkpoint.pt"], "no temporary file is left behind"


def test_a_successful_write_replaces_the_file_and_leaves_nothing_else(tmp_path):
    path = tmp_path / "run" / "checkpoint.pt"  # the folder is created
    save_checkpoint(path, payload(tiny_model(), step=1))
    save_checkpoint(path, payload(tiny_model(), step=2))
    assert load_checkpoint(path)["step"] == 2
    assert os.listdir(path.parent) == ["checkpoint.pt"]


def test_saved_checkpoints_carry_format_and_version_and_load_from_the_run_folder(tmp_path):
    save_checkpoint(tmp_path / "checkpoint.pt", payload(tiny_model()))
    data = load_checkpoint(tmp_path)  # a run folder resolves to its checkpoint.pt
    assert (data["format"], data["version"]) == (FORMAT, VERSION)


# ---- refusing bad files -------------------------------------------------------------------------------

def test_checkpoint_error_is_a_value_error():
    assert issubclass(CheckpointError, ValueError)


def test_a_missing_checkpoint_says_it_does_not_exist(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "nope.pt")
    with pytest.raises(CheckpointError, match="checkpoint.pt' does not exist"):
        load_checkpoint(tmp_path)  # a folder without a checkpoint.pt


def test_a_truncated_checkpoint_says_it_is_truncated(tmp_path):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, payload(tiny_model()))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated"):
        load_checkpoint(path)


@pytest.mark.parametrize("content", [b"", b"not a checkpoint at all\n"])
def test_a_file_that_is_not_a_torch_file_is_refused(tmp_path, content):
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match="truncated or not a minitepo checkpoint"):
        load_checkpoint(path)


@pytest.mark.parametrize("data", [{"weights": torch.zeros(2)}, [1, 2, 3], {"format": "someone-else"}])
def test_a_torch_file_that_minitepo_did_not_write_is_refused(tmp_path, data):
    path = tmp_path / "foreign.pt"
    torch.save(data, path)
    with pytest.raises(CheckpointError, match="is not a minitepo checkpoint"):
        load_checkpoint(path)


@dataclass
class Arbitrary:
    """An object a pickle would rebuild by running code: a weights-only load must refuse it."""

    value: int = 1


def test_a_file_holding_arbitrary_python_objects_is_refused_not_unpickled(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"format": FORMAT, "version": VERSION, "obj": Arbitrary()}, path)
    with pytest.raises(CheckpointError, match="truncated or not a minitepo checkpoint"):
        load_checkpoint(path)


def test_another_format_version_is_refused_with_both_versions_named(tmp_path):
    path = tmp_path / "checkpoint.pt"
    torch.save({**payload(tiny_model()), "format": FORMAT, "version": VERSION + 1}, path)
    with pytest.raises(CheckpointError, match=f"format version {VERSION + 1}, this minitepo reads version {VERSION}"):
        load_checkpoint(path)


@pytest.mark.parametrize("missing", ["model_config", "model", "alphabet", "step"])
def test_a_checkpoint_missing_an_entry_names_it(tmp_path, missing):
    path = tmp_path / "checkpoint.pt"
    data = payload(tiny_model())
    del data[missing]
    save_checkpoint(path, data)
    with pytest.raises(CheckpointError, match=f"lacks its '{missing}' entry"):
        load_checkpoint(path)


def test_a_checkpoint_trained_on_another_alphabet_is_refused_naming_both_alphabets(tmp_path):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, {**payload(tiny_model()), "alphabet": "01+="})
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path, alphabet=ALPHABET)
    assert repr("01+=") in str(info.value) and repr(ALPHABET) in str(info.value)
    with pytest.raises(CheckpointError, match=r"alphabet '01\+='"):
        load_model(path)
    assert load_checkpoint(path)["alphabet"] == "01+="  # without an alphabet to check against, it loads


def test_weights_that_do_not_fit_the_recorded_config_are_refused(tmp_path):
    path = tmp_path / "checkpoint.pt"
    save_checkpoint(path, {**payload(tiny_model(n_embd=16)), "model_config": tiny_model(n_embd=32).config.to_dict()})
    with pytest.raises(CheckpointError, match="weights do not fit its model config"):
        load_model(path)


def test_a_model_config_with_unknown_fields_or_a_wrong_vocab_is_refused(tmp_path):
    path = tmp_path / "checkpoint.pt"
    model = tiny_model()
    save_checkpoint(path, {**payload(model), "model_config": {**model.config.to_dict(), "n_experts": 8}})
    with pytest.raises(CheckpointError, match="unreadable model config"):
        load_model(path)
    save_checkpoint(path, {**payload(model), "model_config": {**model.config.to_dict(), "vocab_size": 99}})
    with pytest.raises(CheckpointError, match="vocab_size 99 does not match its tokenizer's"):
        load_model(path)


# ---- what a real run writes -----------------------------------------------------------------------------

PLAIN = (dict, list, tuple, str, int, float, bool, type(None), torch.Tensor)


def plain_data_only(value, where="checkpoint") -> None:
    assert isinstance(value, PLAIN), f"{where} holds a {type(value).__name__}"
    if isinstance(value, dict):
        for k, v in value.items():
            plain_data_only(k, f"{where} key")
            plain_data_only(v, f"{where}[{k!r}]")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            plain_data_only(v, f"{where}[{i}]")


def test_a_checkpoint_written_by_train_sft_loads_with_weights_only_and_holds_plain_data(sft_checkpoint):
    data = torch.load(sft_checkpoint, map_location="cpu", weights_only=True)
    plain_data_only(data)
    for key in ("model_config", "model", "alphabet", "step", "optimizer", "rng", "data_rng", "config", "task",
                "levels", "accuracy"):
        assert key in data
    assert data["step"] == 2 and data["task"] == "add" and data["levels"] == [1]


def test_load_model_rebuilds_the_trained_model_and_its_tokenizer(sft_checkpoint):
    model, tokenizer, data = load_model(sft_checkpoint)
    assert tokenizer.alphabet == ALPHABET and model.config.n_embd == 16
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, data["model"][name])


# ---- random number generators -------------------------------------------------------------------------------

def draws(generator: torch.Generator) -> tuple:
    return (torch.rand(4), [random.random() for _ in range(4)], torch.randint(0, 10**6, (4,), generator=generator))


def same(a: tuple, b: tuple) -> bool:
    return torch.equal(a[0], b[0]) and a[1] == b[1] and torch.equal(a[2], b[2])


def test_restoring_an_rng_state_replays_torch_python_and_generator_random_numbers():
    g = torch.Generator().manual_seed(123)
    draws(g)  # move every stream away from its seed
    state = rng_state({"sampler": g})
    first = draws(g)
    set_rng_state(state, {"sampler": g})
    assert same(draws(g), first)


def test_an_rng_state_survives_a_round_trip_through_a_checkpoint_file(tmp_path):
    g = torch.Generator().manual_seed(5)
    save_checkpoint(tmp_path / "checkpoint.pt", {**payload(tiny_model()), "rng": rng_state({"sampler": g})})
    first = draws(g)
    draws(g)  # wander further off
    set_rng_state(load_checkpoint(tmp_path)["rng"], {"sampler": g})
    assert same(draws(g), first)
