"""Every study file in examples/ loads; the Campos model-selection supplements share the main file's units."""

from __future__ import annotations

from pathlib import Path

import pytest

from odeval.bench import load_study
from odeval.bench.config import StudyError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
_MISSING = ("matches no file", "does not exist")


def _load(path: Path):
    """The study of an example file, or a skip with the reason when the data it names are absent.

    Only missing data files skip (a fresh clone without ../shared beside it); any other problem fails.
    """
    try:
        return load_study(path)
    except FileNotFoundError as exc:
        pytest.skip(f"{path.name}: data not found ({exc})")
    except StudyError as exc:
        if exc.problems and all(any(m in p for m in _MISSING) for p in exc.problems):
            pytest.skip(f"{path.name}: data not found ({exc.problems[0]})")
        raise


def test_missing_data_skips_with_the_reason_and_other_problems_fail(tmp_path):
    """A fresh clone has no ../shared: its examples skip, naming the glob; a real mistake still fails."""
    absent = tmp_path / "absent.toml"
    absent.write_text('[study]\nname = "x"\nk = "1..5"\n[[datasets]]\nglob = "../no-shared/datasets/*.arff"\n'
                      '[[methods]]\nname = "LOF"\n')
    with pytest.raises(pytest.skip.Exception, match=r"absent.toml: data not found .*matches no file"):
        _load(absent)
    wrong = tmp_path / "wrong.toml"
    wrong.write_text(absent.read_text().replace('name = "LOF"', 'name = "NoSuchMethod"'))
    with pytest.raises(StudyError):
        _load(wrong)


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


def test_the_zoo_selection_step_leaves_its_unit_ids_unchanged(tmp_path):
    """examples/model-selection-zoo.toml's [selection] is per variant: the unit ids (content hashes) are those of the
    same file without it, so a store computed without it only computes the per-variant tasks."""
    from odeval.bench.identity import file_sha256, unit_id

    path = EXAMPLES / "model-selection-zoo.toml"
    zoo = _load(path)
    assert zoo.variant_step.ireos is None and zoo.variant_step.selection_modes == ("all", "10")
    text = path.read_text()
    start = text.index("\n[selection]")
    without = tmp_path / "zoo.toml"  # the same folder depth: examples/ → ../../shared
    without.write_text(text[:start] + text[text.index("\n[[datasets]]", start):]
                       .replace("../../shared/", str(EXAMPLES.parents[1] / "shared") + "/"))
    plain = _load(without)
    assert plain.variant_step is None and plain.methods == zoo.methods
    for ref, other in list(zip(zoo.datasets, plain.datasets, strict=True))[::60]:
        sha = file_sha256(ref.path)
        assert [unit_id(sha, ref, m, zoo) for m in zoo.methods] == [unit_id(sha, other, m, plain)
                                                                     for m in plain.methods]
