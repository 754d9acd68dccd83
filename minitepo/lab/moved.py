"""The lab's modules lived in ``minitepo/`` before the core and the lab were split; their old import paths
(``minitepo.compare``, ``minitepo.stats``, ``python -m minitepo.mask_tokens``, ...) keep working: each old name
is the lab module itself (the same object, so a monkeypatch on either name patches both)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

MOVED = {f"minitepo.{name}": f"minitepo.lab.{name}"
         for name in ("bench", "checkpoint", "cli", "compare", "config", "gpu_check", "guards", "mask_tokens",
                      "plotting", "quickstart", "rl_config", "runs", "stats")}


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old path as its new module; ``python -m OLD`` runs the new module's code."""

    def find_spec(self, name, path=None, target=None):
        if name not in MOVED:
            return None
        return importlib.util.spec_from_loader(name, self, origin=importlib.util.find_spec(MOVED[name]).origin)

    def create_module(self, spec):
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module):
        pass  # the new module has run already

    def get_code(self, name):
        new = MOVED[name]
        return importlib.util.find_spec(new).loader.get_code(new)


if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
    sys.meta_path.insert(0, MovedModules())  # ahead of the path finders: an old path must not find an old file
