"""Write examples/model-selection-campos.toml with its variants listed in an order that makes a partial run useful.

The study runner computes variants in the order the study lists them (one variant after the other with one
worker). The example's glob lists them alphabetically, so a run stopped early would cover only the first base
datasets (Annthyroid first: the largest). This script lists every variant of the glob explicitly, in rounds: round
r holds the r-th variant of every base dataset (within a base dataset: first one variant of each outlier
percentage, v01, then the v02 of each, ...), and each round is sorted by N. A run stopped after a few rounds then
covers every base dataset and several outlier percentages of each, small ones first.

    python benchmarks/ms_campos_order.py OUT.toml [--candidates-ireos all|10]

Task and unit ids are content hashes (not of the study or its order), so the ordered study and the example share
every finished result in one store.
"""

from __future__ import annotations

import argparse
import glob
import re
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "model-selection-campos.toml"


def n_objects(path: str) -> int:
    with open(path, errors="replace") as fh:
        return sum(1 for line in fh if line.strip() and not line.startswith(("%", "@")))


def ordered(paths: list[str]) -> list[str]:
    from odeval.data import catalogue

    by_base: dict[str, list[tuple]] = {}
    for p in paths:
        v = catalogue.variant_from_path(p)
        by_base.setdefault(v.base_dataset, []).append((v.version or 0, v.outlier_pct or 0, n_objects(p), p))
    rounds: list[list[tuple[int, str]]] = []
    for items in by_base.values():
        for r, (_ver, _pct, n, p) in enumerate(sorted(items)):
            while len(rounds) <= r:
                rounds.append([])
            rounds[r].append((n, p))
    return [p for rnd in rounds for _n, p in sorted(rnd)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--example", type=Path, default=EXAMPLE)
    args = ap.parse_args()
    text = args.example.read_text()
    m = re.search(r'^\[\[datasets\]\][^\n]*\nglob = "([^"]+)"\n', text, flags=re.M)
    if m is None:
        raise SystemExit(f"{args.example}: no [[datasets]] glob entry to expand")
    pattern = str((args.example.parent / m.group(1)).resolve()) if not Path(m.group(1)).is_absolute() \
        else m.group(1)
    paths = ordered(sorted(glob.glob(pattern)))
    entries = "".join(f'[[datasets]]\npath = "{p}"\n' for p in paths)
    args.out.write_text(text[:m.start()] + f"# {len(paths)} variants, ordered by benchmarks/ms_campos_order.py\n"
                        + entries + text[m.end():])
    print(f"{args.out}: {len(paths)} variants")


if __name__ == "__main__":
    main()
