"""The package's layout: the core a learner reads imports nothing from the lab that runs it, and the lab's old
import paths still lead to the lab's modules."""

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "minitepo"
CORE = sorted(p for p in PACKAGE.rglob("*.py")
              if p.relative_to(PACKAGE).parts[0] not in ("lab", "integrations", "__init__.py", "__main__.py"))


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, as an absolute dotted name (relative imports resolved)."""
    package = ".".join(("minitepo",) + path.relative_to(PACKAGE).parent.parts)
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def test_the_core_is_what_the_issue_lists():
    names = {str(p.relative_to(PACKAGE)) for p in CORE}
    assert {"model.py", "tokenizer.py", "sampling.py", "rollout.py", "advantages.py", "sft.py", "rl.py",
            "losses/sequence_level.py"} <= names, names


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_core_imports_nothing_from_the_lab(path):
    lab = sorted(name for name in imported_modules(path) if name == "minitepo.lab" or name.startswith("minitepo.lab."))
    assert not lab, f"{path.relative_to(PACKAGE)} imports the lab: {lab}"


@pytest.mark.parametrize("name", ["compare", "stats", "runs", "checkpoint", "guards", "quickstart", "rl_config",
                                  "plotting", "cli", "config", "bench", "gpu_check", "mask_tokens"])
def test_a_lab_module_keeps_its_old_import_path(name):
    assert importlib.import_module(f"minitepo.{name}") is importlib.import_module(f"minitepo.lab.{name}")


def test_every_path_in_the_readme_layout_exists():
    readme = (PACKAGE.parent / "README.md").read_text()
    table = readme[readme.index("## Layout"):readme.index("## One RL step by hand")]
    import re
    paths = re.findall(r"`((?:minitepo|toy_tasks|lessons|tests|docs|spec)/[^`]*)`", table)
    missing = [p for p in paths if not any((PACKAGE.parent).glob(p))]
    assert paths and not missing, f"the README's Layout names paths that do not exist: {missing}"

