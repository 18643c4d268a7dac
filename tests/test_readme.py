"""The README's "Using it" commands work exactly as written, in a fresh venv set up as `make demo` sets it up.

The test copies the repository's files to a temporary folder (as a new user's clone), creates a fresh
`.venv` there with `python -m venv` and installs odeval into it with `pip install -e '<repo>[plot]'` — the
install step of `make demo` (`make install`; no other extra) — then runs the README's shell block, parsed
from README.md itself, its activation line included, with bash in that folder, and the README's Python
example with the venv's python.

Two deliberate differences from a literal `make install` in the copy keep it fast: the editable install points at this
checkout rather than at the copy, so the compiled numba kernels cached next to the sources by the earlier
tests are reused instead of compiled again (minutes of CPU on a cold cache); and pip is not upgraded
first. Dependencies are resolved and installed by pip into the new venv exactly as for a user (pip's
find-links / cache where the machine has them); the test skips with the reason when no package index is
reachable. `test_makefile_install_step_is_what_this_test_does` pins the Makefile's recipe.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_blocks(text: str, section: str = "Using it") -> tuple[str, str]:
    """The ```bash blocks (joined, in order) and the ```python block of one ``## section`` of the README."""
    m = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## )", text, flags=re.S | re.M)
    assert m, f"README.md has no '## {section}' section"
    body = m.group(1)
    bash = re.findall(r"```bash\n(.*?)```", body, flags=re.S)
    python = re.findall(r"```python\n(.*?)```", body, flags=re.S)
    assert bash and len(python) == 1, f"'## {section}' should hold bash blocks and one python block"
    return "".join(bash), python[0]


def commands(block: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [line.split("  #")[0].strip() for line in joined.splitlines() if line.strip() and
            not line.lstrip().startswith("#")]


def test_readme_block_parses():
    """Cheap check of the parser and of the README's promises (runs in every quick test run too)."""
    bash, python = readme_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
    cmds = commands(bash)
    assert cmds[0] == ". .venv/bin/activate"
    assert all(c.startswith("odeval ") or c == cmds[0] for c in cmds[1:]), cmds
    # "Using it" opens with "No labels? Choose a detector": odeval select, then checked with --check-labels
    assert re.search(r"^## Using it\n+\*\*No labels\? Choose a detector\.\*\*", (ROOT / "README.md").read_text(),
                     flags=re.M)
    selects = [c for c in cmds if c.startswith("odeval select ")]
    assert cmds[1:3] == selects[:2] and "--check-labels" not in selects[0] and "--check-labels" in selects[1]
    for c in cmds:  # every file argument of the block exists in the repository (or is written by a command)
        for arg in c.split()[1:]:
            if re.search(r"\.(arff|toml|mat|npz|csv)$", arg):
                assert (ROOT / arg).is_file(), f"README command {c!r}: {arg} does not exist"
    for path in re.findall(r'load_dataset\("([^"]+)"\)', python):
        assert (ROOT / path).is_file(), f"README Python example: {path} does not exist"
    # the ensemble example needs a study that keeps its score vectors
    study = next(a for c in cmds if c.startswith("odeval study run") for a in c.split() if a.endswith(".toml"))
    assert re.search(r"^keep_scores\s*=\s*true", (ROOT / study).read_text(encoding="utf-8"), flags=re.M)


def _copy_repository(dest: Path) -> None:
    """The repository's files as a clone has them (git's list when available, else the tree minus build output)."""
    try:
        files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        names = [n for n in files.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
    if names:
        for name in names:
            src = ROOT / name
            if src.is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / name)
    else:
        shutil.copytree(ROOT, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            ".venv", ".git", "__pycache__", "*.egg-info", "*.duckdb", "test-artifacts", "build", ".*_cache"))


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_makefile_install_step_is_what_this_test_does():
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "$(PYTHON) -m venv $(VENV)" in make
    assert "$(BIN)/pip install --quiet -e '.[plot]'" in make
    assert re.search(r"^demo: \$\(VENV\)/\.installed$", make, flags=re.M)


@pytest.mark.slow
def test_readme_commands_in_a_fresh_venv(tmp_path):
    repo = tmp_path / "odeval"
    _copy_repository(repo)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.pop("ODEVAL_DATA", None)
    # `make install`: a new venv from the interpreter that runs the tests (same Python version), odeval[plot]
    venv = _run([sys.executable, "-m", "venv", ".venv"], repo, env, timeout=300)
    assert venv.returncode == 0, venv.stderr
    install = _run([str(repo / ".venv" / "bin" / "pip"), "install", "--quiet", "-e", f"{ROOT}[plot]"], repo, env,
                   timeout=1500)
    if install.returncode != 0:
        out = install.stdout + install.stderr
        if re.search(r"No matching distribution|Could not find a version|connection|Network is unreachable",
                     out, flags=re.I):
            pytest.skip(f"the fresh venv could not be installed (no package index?): {out[-400:]}")
        pytest.fail(f"pip install -e '.[plot]' failed:\n{out[-3000:]}")
    assert "deprecat" not in install.stderr.lower(), install.stderr  # e.g. the license as a TOML table

    bash, python = readme_blocks((repo / "README.md").read_text(encoding="utf-8"))
    script = "set -euo pipefail\nset -x\n" + bash
    r = _run(["bash", "-c", script], repo, env, timeout=1800)
    assert r.returncode == 0, f"a README command failed (the last '+ ' line):\n{r.stderr[-4000:]}\n{r.stdout[-2000:]}"
    assert r.stdout.count("Recommendation: ") == 2 and "Check against held-back labels" in r.stdout
    assert (repo / "select-out" / "select.html").is_file()
    assert (repo / "scores.parquet").is_file()
    assert (repo / "report" / "index.html").is_file()
    assert (repo / "examples" / "runs.parquet").is_file() or any((repo / "examples").glob("*.parquet"))
    assert len(list((repo / "out").glob("*.arff"))) == 10
    assert "greedy" in r.stdout.lower()  # the ensemble command printed its result

    py = _run([str(repo / ".venv" / "bin" / "python"), "-c", python], repo, env, timeout=600)
    assert py.returncode == 0, py.stderr[-3000:]
    assert "roc_auc" in py.stdout
