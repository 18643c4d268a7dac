"""Build ``src/odeval/labelfree/data/campos_record.json``: each selector's measured record on the Campos collection.

``odeval select`` prints, under "what to expect", how each selector it runs did on the labelled Campos collection
(262 ``*_withoutdupl_norm*`` variants, the twelve methods × k = 1..100). The numbers come from the tables of
docs/model-selection.md, "IREOS with the pinned classifier" — the study ``examples/model-selection-campos.toml``
rerun with today's IREOS defaults (the authors' pinned classifier, the paper's uniform null), which the ``ireos``
selectors and the guarded rule run since 2026-11-27 — and are read from that page, not recomputed: the results
store of that run is not kept in the repository, so the file records the page and the commits instead of a store
hash. (The record before 2026-11-27 was the optimum's audit, the section "Results on the Campos collection (with
IREOS)" at 51d4ff4.)

    python benchmarks/select_record.py                 # rewrite the data file from docs/model-selection.md
    python benchmarks/select_record.py --check         # exit 1 if the data file differs from the page
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "model-selection.md"
OUT = ROOT / "src" / "odeval" / "labelfree" / "data" / "campos_record.json"
SECTION = "### IREOS with the pinned classifier (the audit rerun, 2026-11-27)"

SOURCE = {
    "document": "docs/model-selection.md, 'IREOS with the pinned classifier (the audit rerun, 2026-11-27)'",
    "study": "examples/model-selection-campos.toml (262 *_withoutdupl_norm* variants of the Campos collection, "
             "15 base datasets; the twelve methods × k = 1..100; approximate IREOS of all candidates: kNN subsets "
             "of 250, m_cl = 1, adjusted for chance, the authors' pinned classifier, the paper's uniform null)",
    "commit": "5f0e77d, ac1ab82",
    "run_date": "2026-11-27",
    "store": "not kept in the repository: no store hash recorded; the numbers are read from the document above "
             "(benchmarks/select_record.py)",
    "script": "benchmarks/select_record.py",
    "test": "one-sided Wilcoxon signed-rank test over the variants (the p columns); percentile = the pick's "
            "percentile among the candidates by ROC AUC, 50 = a random candidate on average",
    "guarded_study": "the 'registered, …' lines of the same section: the registered ireos-guarded selector itself, "
                     "examples/model-selection-campos-guarded.toml run into the same store at 37c9122 "
                     "(2026-11-27); its 'registered, held out' line is the selector's record row",
}


def _number(text: str) -> float | None:
    text = text.strip()
    if text in ("—", "-", ""):
        return None
    return float(text)


def _table_after(lines: list[str], start: int) -> tuple[list[dict], int]:
    """The first markdown table at or after ``start``, as one dict per selector row."""
    i = start
    while not lines[i].startswith("| selector"):
        i += 1
    header = [h.strip() for h in lines[i].strip("|\n").split("|")]
    rows = []
    i += 2
    while i < len(lines) and lines[i].startswith("|"):
        cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
        row = dict(zip(header, cells, strict=True))
        best, _n_var = row["best pick"].split("/")
        rows.append({"selector": row["selector"], "mean_roc_auc": _number(row["mean roc_auc"]),
                     "mean_percentile": _number(row["mean percentile"]), "best_pick": int(best),
                     "mean_rank": _number(row["mean rank"]), "p_vs_random": _number(row["p vs random"]),
                     "p_vs_default_knn10": _number(row["p vs default-knn10"]),
                     "p_vs_default_lof20": _number(row["p vs default-lof20"])})
        i += 1
    return rows, i


_GUARD = re.compile(r"^\* (?P<subset>first audit|held out|registered, first audit|registered, held out|"
                    r"registered, all) \((?P<n>\d+) variants\): (?:guarded IREOS|ireos-guarded) .*?mean roc_auc "
                    r"(?P<auc>[\d.]+), percentile (?P<pct>\d+); against ireos (?P<ireos>[\d.]+) "
                    r"\(p = (?P<p_ireos>[^)]+)\); ensemble (?P<ens>[\d.]+) \(p = (?P<p_ens>[^)]+)\); "
                    r"random (?P<rand>[\d.]+) \(p = (?P<p_rand>[^)]+)\); "
                    r"default-knn10 (?P<knn>[\d.]+) \(p = (?P<p_knn>[^)]+)\)")


def _section(lines: list[str], heading: str) -> list[str]:
    """The lines of the section under ``heading``, up to the next heading of its level or above."""
    start = lines.index(heading)
    level = heading.split(" ")[0]
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].startswith("#") and len(lines[i].split(" ")[0]) <= len(level)), len(lines))
    return lines[start:end]


def build(doc: Path = DOC) -> dict:
    lines = _section(doc.read_text(encoding="utf-8").splitlines(), SECTION)
    # "All candidates:" then "The ten candidates ...:", each followed by its selector table
    all_at = next(i for i, line in enumerate(lines) if re.match(r"All candidates[:( ]", line))
    all_rows, end = _table_after(lines, all_at)
    ten_at = next(i for i in range(end, len(lines)) if lines[i].startswith("The ten candidates"))
    ten_rows, _ = _table_after(lines, ten_at)
    variants = int(re.search(r"^(\d+) variants", lines[all_at + 2]).group(1))
    guarded: dict[str, list[dict]] = {"all": [], "ten": []}
    which = None
    for line in lines:
        # the guarded lines belong to the candidate set of the last "All candidates" / "The ten candidates" line
        if line.startswith("All candidates"):
            which = "all"
        elif line.startswith("The ten candidates"):
            which = "ten"
        m = _GUARD.match(line)
        if m and which:
            guarded[which].append({
                "subset": m["subset"], "n_variants": int(m["n"]), "mean_roc_auc": float(m["auc"]),
                "mean_percentile": float(m["pct"]), "p_vs_ireos": float(m["p_ireos"]),
                "p_vs_ensemble": float(m["p_ens"]), "p_vs_random": float(m["p_rand"]),
                "p_vs_default_knn10": float(m["p_knn"]), "default_knn10_mean_roc_auc": float(m["knn"]),
                "ensemble_mean_roc_auc": float(m["ens"]), "ireos_mean_roc_auc": float(m["ireos"])})
    return {
        "source": SOURCE,
        "n_variants": variants,
        "reference": "default-knn10",
        "candidates": {
            "all": {"description": "all candidates (the twelve methods × k = 1..100, 584–1196 per variant)",
                    "selectors": all_rows, "ireos_guarded": guarded["all"]},
            "ten": {"description": "the ten candidates of Marques et al. 2020, §4.2 (spread over ROC AUC)",
                    "selectors": ten_rows, "ireos_guarded": guarded["ten"]},
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the data file instead of writing it")
    args = ap.parse_args(argv)
    text = json.dumps(build(), indent=1, ensure_ascii=False) + "\n"
    if args.check:
        same = OUT.read_text(encoding="utf-8") == text
        print(f"{OUT}: {'up to date' if same else 'differs from ' + str(DOC)}")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
