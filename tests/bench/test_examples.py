"""Every study file in examples/ loads; the Campos model-selection supplements share the main file's units."""

from __future__ import annotations

from pathlib import Path

import pytest

from odeval.bench import load_study

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(path: Path):
    try:
        return load_study(path)
    except FileNotFoundError as exc:  # globs / paths into ../shared/datasets
        pytest.skip(f"{path.name}: data not found ({exc})")


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_example_study_loads(path):
    study = _load(path)
    assert study.datasets and study.methods


def test_campos_selection_supplements_share_the_main_units():
    """The supplements are run into the main file's store: same methods, k and metric (content-hash unit ids)."""
    main = _load(EXAMPLES / "model-selection-campos.toml")
    assert len(main.datasets) == 262
    assert main.variant_step.ireos is not None and main.variant_step.selectors
    for name, n_variants, selectors in (("model-selection-campos-laplacian.toml", 262,
                                         ("laplacian-1", "laplacian-sqrt", "laplacian-100")),
                                        ("model-selection-campos-emmv.toml", 12, ("em", "mv", "mc-kendall"))):
        sup = _load(EXAMPLES / name)
        assert sup.methods == main.methods and sup.metric == main.metric, name
        assert {v.path for v in sup.datasets} <= {v.path for v in main.datasets}, name
        assert len(sup.datasets) == n_variants and sup.variant_step.selectors == selectors, name
        assert sup.variant_step.ireos is None, name  # IREOS stays in the main file
    emmv = _load(EXAMPLES / "model-selection-campos-emmv.toml")
    assert len({v.base_dataset for v in emmv.datasets}) == 12
