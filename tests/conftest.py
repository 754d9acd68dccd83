"""Test configuration shared by the whole suite.

* The repository root goes at the end of sys.path so ``import minitepo`` works without installing it
  (appended, so an installed copy or PYTHONPATH still wins).
* One Hypothesis profile: no per-example deadline (CPU timing on shared machines is noisy),
  derandomized so every run checks the same examples, the reproduction blob printed on failure, and
  no "explain" phase (it traces coverage and is slow).
  Each test picks its own example count with ``@settings(max_examples=...)``.
  $MINITEPO_HYPOTHESIS_PROFILE=minitepo-noshrink skips shrinking (quick mutation testing).
"""
import os
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, Phase, settings

# One CPU thread, like the command line's default for every command but quickstart: a busy machine makes
# more very slow, and seeded numbers do not depend on the core count.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def one_thread_again():
    """A test that runs ``main(["quickstart", ...])`` sets 2 threads (the quickstart's default) and deterministic
    algorithms; put 1 thread back, and the algorithms off, so the seeded numbers of every later test stay the same."""
    yield
    if torch.get_num_threads() != 1:
        torch.set_num_threads(1)
    torch.use_deterministic_algorithms(False)   # the command line turns them on with more than one thread

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

settings.register_profile(
    "minitepo",
    deadline=None,
    derandomize=True,
    print_blob=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],  # no slow "explain" phase
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# for mutation testing: same examples, stop at the first failure instead of shrinking it
settings.register_profile("minitepo-noshrink", settings.get_profile("minitepo"),
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.load_profile(os.environ.get("MINITEPO_HYPOTHESIS_PROFILE", "minitepo"))


@pytest.fixture(scope="session")
def warm_start(tmp_path_factory) -> str:
    """A tiny model that already solves some 1-digit additions, so RL rewards have spread."""
    from minitepo.lab.sft_run import SFTConfig, train_sft

    out = tmp_path_factory.mktemp("warm")
    train_sft(SFTConfig(task="add", levels="1", steps=120, batch_size=32, lr=3e-3, eval_every=120, n_layer=2,
                        n_head=2, n_embd=64, device="cpu", out=str(out), progress=False))
    return str(out / "checkpoint.pt")
