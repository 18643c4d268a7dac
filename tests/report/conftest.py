"""Fixtures of the report tests: results-store frames (shared helpers of tests/analysis)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))

from results_frames import synthetic_results


@pytest.fixture(scope="session")
def small_study():
    """(runs, outlier_ranks) of a small synthetic study: 3 base datasets × 2 variants × 4 methods × k = 1..15."""
    return synthetic_results(n_base=3, n_variants=2, ks=range(1, 16), seed=1)


def chromium() -> str | None:
    """The headless browser of the rendering tests (None: not installed; those tests skip)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        exe = shutil.which(name)
        if exe:
            return exe
    return None


def run_chrome(exe: str, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """Run headless Chromium with a throw-away profile in ``tmp`` (``--dump-dom URL``, ``--screenshot=PNG URL``)."""
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp / 'profile'}",
           "--enable-logging=stderr", "--v=0", "--log-level=0", "--hide-scrollbars", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


_PROBE = """<script>
window.addEventListener('load', () => {
  const root = document.documentElement;
  const out = {viewport: root.clientWidth, scroll_width: root.scrollWidth, tables: []};
  document.querySelectorAll('table').forEach((t) => {
    const box = t.closest('.tablebox') || t;
    const section = [...document.querySelectorAll('h2')].filter(
      (h) => h.compareDocumentPosition(t) & Node.DOCUMENT_POSITION_FOLLOWING).pop();
    const edges = box.getBoundingClientRect();
    out.tables.push({section: section ? section.id || section.textContent : '', box_left: edges.left,
                     box_right: edges.right, box_width: box.clientWidth,
                     table_width: t.getBoundingClientRect().width});
  });
  const pre = document.createElement('pre');
  pre.id = 'odeval-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def measure_layout(exe: str, page: Path, width: int, tmp: Path) -> dict:
    """Lay ``page`` out in headless Chromium ``width`` px wide and measure it: the viewport, the document's
    scrollWidth and, per table, its section and the box it sits in (left, right, inner width) and its own width.

    The report uses no scripts, so the probe is a copy of the page with a measuring script added, written next to
    the page (its relative links and figures resolve the same)."""
    probe = page.with_name(f"_probe_{width}_{page.name}")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    try:
        res = run_chrome(exe, tmp, f"--window-size={width},1000", "--dump-dom", probe.resolve().as_uri())
    finally:
        probe.unlink()
    found = re.search(r'<pre id="odeval-probe">(.*?)</pre>', res.stdout, re.S)
    assert found, f"no measurement from chromium: {res.stderr[-2000:]}"
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
