"""The package's layout: the core a learner reads imports nothing from the lab that runs it, and importing the
core loads none of the lab."""

import ast
import json
import subprocess
import sys
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
    assert {"model.py", "tokenizer.py", "rollout.py", "shared_prompt.py", "advantages.py", "sft.py", "rl.py",
            "losses/sequence_level.py"} <= names, names


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_core_imports_nothing_from_the_lab(path):
    lab = sorted(name for name in imported_modules(path) if name == "minitepo.lab" or name.startswith("minitepo.lab."))
    assert not lab, f"{path.relative_to(PACKAGE)} imports the lab: {lab}"


LAB_ONLY = ("matplotlib", "tqdm")  # what only the lab needs: plots and progress bars


def modules_loaded_by(statement: str) -> dict:
    """What a fresh Python process holds in ``sys.modules`` after ``statement``: every module, and the ones that
    ``import torch`` alone had not loaded already (torch itself imports tqdm, for ``torch.hub``)."""
    code = (f"import json, sys, torch; before = set(sys.modules); {statement}; "
            f"print(json.dumps({{'all': sorted(sys.modules), 'new': sorted(set(sys.modules) - before)}}))")
    done = subprocess.run([sys.executable, "-c", code], cwd=PACKAGE.parent, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


CORE_MODULES = sorted(".".join(("minitepo",) + p.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
                      for p in CORE)


@pytest.mark.parametrize("statement", ["import minitepo", "import minitepo.model",
                                       "import " + ", ".join(CORE_MODULES)])
def test_importing_the_core_loads_no_lab_module_no_matplotlib_and_no_tqdm(statement):
    loaded = modules_loaded_by(statement)
    lab = [m for m in loaded["all"] if m == "minitepo.lab" or m.startswith("minitepo.lab.")]
    assert not lab, f"{statement!r} loaded the lab: {lab}"
    assert not [m for m in loaded["all"] if m.split(".")[0] == "matplotlib"], f"{statement!r} loaded matplotlib"
    pulled_in = sorted({m.split(".")[0] for m in loaded["new"]} & set(LAB_ONLY))
    assert not pulled_in, f"{statement!r} loaded {pulled_in} (beyond what `import torch` loads)"


def test_the_lab_hands_out_its_names_on_demand():
    loaded = modules_loaded_by("import minitepo.lab.stats")
    assert "minitepo.lab.plotting" not in loaded["all"] and "matplotlib" not in loaded["all"]
    from minitepo.lab import RLConfig, SFTConfig, plot_runs, train_rl, train_sft
    from minitepo.lab.plotting import plot_runs as plot_runs_there
    assert plot_runs is plot_runs_there and callable(train_rl) and callable(train_sft)
    assert RLConfig.__module__ == "minitepo.lab.rl_config" and SFTConfig.__module__ == "minitepo.lab.sft_run"
    import minitepo.lab
    with pytest.raises(AttributeError, match="its names: SFTConfig"):
        minitepo.lab.TrainRL


def test_every_path_in_the_readme_layout_exists():
    readme = (PACKAGE.parent / "README.md").read_text()
    table = readme[readme.index("## Layout"):readme.index("## One RL step by hand")]
    import re
    paths = re.findall(r"`((?:minitepo|toy_tasks|lessons|tests|docs|spec)/[^`]*)`", table)
    missing = [p for p in paths if not any((PACKAGE.parent).glob(p))]
    assert paths and not missing, f"the README's Layout names paths that do not exist: {missing}"



def test_every_relative_link_in_readme_docs_research_and_lessons_resolves():
    """A moved page or summary breaks no link: every ``[text](path)`` that is not a web address or an anchor names a
    file or folder that exists, relative to the page that holds it."""
    import re
    root = PACKAGE.parent
    pages = ([root / "README.md"] + sorted((root / "docs").rglob("*.md")) + sorted((root / "research").rglob("*.md"))
             + sorted((root / "lessons").glob("*.md")) + sorted((root / "lessons").glob("*.py")))
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            path = target.split("#")[0]
            if path and not re.match(r"[a-z]+:", target) and not (page.parent / path).exists():
                broken.append(f"{page.relative_to(root)}: {target}")
    assert len(pages) > 20 and not broken, "links to nothing:\n" + "\n".join(broken)


def test_the_readmes_reading_path_gives_each_files_true_size():
    """The README's "Read it" table says how long each file on the iteration's path is: it says the truth. A table row
    ends in its files' counts ("| 129 + 406 |"); a file beside the path says "(150 lines)"."""
    import re
    readme = (PACKAGE.parent / "README.md").read_text()
    section = readme[readme.index("## Read it"):readme.index("## Learn it")]
    stated = {}
    for line in section.splitlines():
        row = re.search(r"\|\s*(\d+(?: \+ \d+)*)\s*\|$", line)
        if line.startswith("|") and row:
            stated.update(zip(re.findall(r"\[`([\w/.]+\.py)`\]", line), map(int, re.findall(r"\d+", row.group(1)))))
        stated.update((path, int(n)) for path, n in re.findall(r"\[`([\w/.]+\.py)`\]\([^)]*\) \((\d+) lines\)", line))
    true = {path: len((PACKAGE.parent / path).read_text().splitlines()) for path in stated}
    assert len(stated) >= 8 and stated == true, f"README 'Read it': stated {stated}, true {true}"
