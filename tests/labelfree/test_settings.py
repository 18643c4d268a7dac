"""Label-free parameters are declared once (IREOSSettings, EMMVSettings) and read from there by the functions, the
study file's options, the CLI and the selectors."""

from __future__ import annotations

import inspect
from dataclasses import fields

import pytest

from odeval.labelfree import EMMVSettings, IREOSSettings, emmv, emmv_all_k, emmv_many, ireos, ireos_select
from odeval.labelfree.ireos import PAPER_KNN


@pytest.mark.parametrize("fn", [ireos, ireos_select])
def test_ireos_defaults_are_the_settings(fn):
    params = inspect.signature(fn).parameters
    for f in fields(IREOSSettings):
        if f.name in params:
            assert params[f.name].default == f.default, f.name
    assert IREOSSettings().C == 100.0


@pytest.mark.parametrize("fn", [emmv, emmv_all_k, emmv_many])
def test_emmv_defaults_are_the_settings(fn):
    params = inspect.signature(fn).parameters
    for f in fields(EMMVSettings):
        assert params[f.name].default == f.default, f.name


def test_study_options_and_selectors_read_the_settings():
    from odeval.bench.config import INTERNAL_OPTIONS, IREOS_OPTIONS
    from odeval.labelfree.selection import EMMV_SELECTOR_SETTINGS, IREOS_SELECTOR_SETTINGS, get_selector

    s = IREOSSettings()
    assert (IREOS_OPTIONS["C"], IREOS_OPTIONS["tol"], IREOS_OPTIONS["n_gamma"]) == (s.C, s.tol, s.n_gamma)
    assert IREOS_OPTIONS["knn"] == IREOS_SELECTOR_SETTINGS.knn == PAPER_KNN
    assert set(INTERNAL_OPTIONS) == {f.name for f in fields(EMMVSettings)} | {"seed"}
    assert get_selector("em").settings == get_selector("mv").settings == EMMV_SELECTOR_SETTINGS == EMMVSettings()
    assert get_selector("ireos").settings == get_selector("ireos-sqrt5").settings == IREOS_SELECTOR_SETTINGS


def test_cli_defaults_read_the_settings():
    import click

    from odeval.cli import main

    def defaults(command):
        cmd = main.commands[command]
        ctx = click.Context(cmd)
        return {p.name: p.get_default(ctx) for p in cmd.params}

    ir = defaults("ireos")
    assert (ir["cost"], ir["tol"], ir["n_gamma"]) == (IREOSSettings().C, IREOSSettings().tol, IREOSSettings().n_gamma)
    em = defaults("emmv")
    assert [em[f.name] for f in fields(EMMVSettings)] == [f.default for f in fields(EMMVSettings)]
    sa = defaults("select-audit")
    assert (sa["emmv_draws"], sa["emmv_n_generated"]) == (EMMVSettings().draws, EMMVSettings().n_generated)


@pytest.mark.parametrize(("settings", "match"), [
    (lambda: IREOSSettings(C=0), "C must be a positive number"),
    (lambda: IREOSSettings(m_cl="big"), "m_cl must be 1, a larger integer or 'sqrt5'"),
    (lambda: IREOSSettings(quadrature="simpson"), "quadrature must be 'adaptive' or 'fixed'"),
    (lambda: IREOSSettings(n_gamma=1), "n_gamma must be an integer ≥ 2"),
    (lambda: IREOSSettings(gamma_max_quantile=1.5), r"gamma_max_quantile must be in \(0, 1\]"),
    (lambda: EMMVSettings(draws=0), r"draws \(m\) must be an integer ≥ 1"),
    (lambda: EMMVSettings(max_dim=-1), "max_dim must be an integer ≥ 0"),
])
def test_bad_settings_are_one_line_errors(settings, match):
    with pytest.raises(ValueError, match=match):
        settings()


def test_for_objects_uses_the_exact_index_on_small_data():
    s = IREOSSettings(knn=250)
    assert s.for_objects(251).knn is None and s.for_objects(252).knn == 250
    assert IREOSSettings().for_objects(10).knn is None
