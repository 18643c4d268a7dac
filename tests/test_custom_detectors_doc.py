"""docs/custom-detectors.md's worked example runs exactly as written (issue 25).

The page's ```python and ```toml blocks that start with a ``# FILE`` comment are written to those files in a
fresh folder (beside a link to the repository's ``src``, so the study's dataset glob finds the vendored files as
it does from the repository's folder); the ```bash block's commands run there with the ``odeval`` command of
this environment, then the ``run_*.py`` scripts with its Python, each as a user would start them.
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
DOC = ROOT / "docs" / "custom-detectors.md"


def doc_files(text: str) -> dict[str, str]:
    """FILE → content of every ```python / ```toml block whose first line is ``# FILE``."""
    files = {}
    for _lang, body in re.findall(r"```(python|toml)\n(.*?)```", text, flags=re.S):
        first = body.splitlines()[0]
        m = re.fullmatch(r"# (\S+\.(?:py|toml))", first)
        if m:
            files[m.group(1)] = body
    return files


def doc_commands(text: str) -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1, "docs/custom-detectors.md should hold one bash block (the worked example's commands)"
    return [line.split("  #")[0].strip() for line in blocks[0].splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def _folder(tmp_path: Path) -> Path:
    work = tmp_path / "repo"
    work.mkdir()
    (work / "src").symlink_to(ROOT / "src", target_is_directory=True)
    for name, body in doc_files(DOC.read_text(encoding="utf-8")).items():
        (work / name).write_text(body, encoding="utf-8")
    return work


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src")  # this checkout's odeval, as the editable install of a clone gives it
    return env


def test_the_doc_example_parses_and_its_study_loads(tmp_path, monkeypatch):
    text = DOC.read_text(encoding="utf-8")
    files = doc_files(text)
    assert set(files) == {"mydetectors.py", "my-study.toml", "run_my_study.py", "run_from_python.py"}
    # the own detector is the promised ten lines (code lines, blank lines and the docstring left out)
    code = [ln for ln in files["mydetectors.py"].splitlines()[1:] if ln.strip() and '"""' not in ln]
    assert len(code) <= 10, code
    assert [c.split()[0] for c in doc_commands(text)] == ["odeval"] * 3
    work = _folder(tmp_path)
    monkeypatch.chdir(work)
    from odeval.bench import load_study

    study = load_study("my-study.toml")
    assert len(study.methods) == 19 and len(study.datasets) == 3


@pytest.mark.slow
def test_the_doc_example_runs_as_written(tmp_path):
    text = DOC.read_text(encoding="utf-8")
    work = _folder(tmp_path)
    odeval = shutil.which("odeval") or str(Path(sys.executable).parent / "odeval")
    out = []
    for command in doc_commands(text):
        argv = command.split()
        argv[0] = odeval
        res = subprocess.run(argv, cwd=work, env=_env(), capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, f"{command}:\n{res.stdout}\n{res.stderr}"
        out.append(res.stdout + res.stderr)
    assert "3 dataset variants × 19 methods = 57 units" in out[0]
    assert "57 units" in out[1] and "FAILED" not in out[1]
    assert (work / "my-report" / "index.html").is_file()
    for script in ("run_my_study.py", "run_from_python.py"):
        res = subprocess.run([sys.executable, script], cwd=work, env=_env(), capture_output=True, text=True,
                             timeout=600)
        assert res.returncode == 0, f"{script}:\n{res.stdout}\n{res.stderr}"
        out.append(res.stdout)
    assert "57 units already stored, 0 computed, 0 failed" in out[3]  # the CLI run computed them
    assert "KNNMedian" in out[3] and "IForest" in out[3] and "OneClassSVM" in out[3]
    assert "3 units, 0 failed" in out[4]
