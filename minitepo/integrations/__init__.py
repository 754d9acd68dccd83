"""Adapters that run minitepo's TEPO objective inside RL frameworks that train real models.

    minitepo.integrations.verl   verl 0.9.1 (Ray + FSDP/Megatron): a registered policy loss "tepo"
    minitepo.integrations.trl    TRL 1.16.0 (accelerate/DeepSpeed): TEPOConfig, TEPOGRPOTrainer

Each is imported on its own and needs its extra: ``pip install -e ".[verl]"`` or ``".[trl]"``
(ci/integrations-lock.txt pins what the tests ran with). Nothing here is imported by
``minitepo`` itself. docs/scale-out.md shows how to switch a run and what is proven.
"""


def check_switch(value, allowed: tuple, name: str, hint: str = "") -> None:
    """A ValueError naming the bad value and the allowed ones, unless ``value`` is in ``allowed`` (a TEPO switch of
    an adapter's config: ``name`` as the framework's config spells it)."""
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}{hint}; allowed: {', '.join(repr(a) for a in allowed)}")
