"""IREOS on a pruned candidate set, and the γ_max-guarded selector ("IREOS if γ_max ≤ 100, else the ensemble").

docs/model-selection.md ("IREOS and γ_max: a held-out check") found on the Campos collection that the IREOS pick is
good where the γ_max search of Marques et al. (2020, §3.4) ends low (≤ 100) and near random where near-duplicates
blow γ_max up, and that the label-free rule *IREOS where γ_max ≤ 100, else the ensemble* beats IREOS alone and the
ensemble among the ten §4.2 candidates (held out: mean ROC AUC 0.746 against 0.728 and 0.720), while still staying
below kNN with k = 10 (0.769). That audit used the exact KLR optimum; its rerun with the authors' classifier
(``"pinned"``, :data:`odeval.labelfree.ireos.CLASSIFIERS`; docs/model-selection.md, "IREOS with the pinned
classifier") tested the same 100 out of sample and the rule held again. This module makes that rule a registered
selector, ``ireos-guarded``, with the pinned classifier by default (:attr:`GuardedSettings.classifier`).

IREOS separates *different* candidates; among ~1,200 near-identical ones its differences are not aligned with
quality (same page). So IREOS runs here on a pruned set: :func:`prune_candidates` keeps ``n`` candidates spread over
the candidate space (farthest-point sampling in Spearman distance 1 − ρ, from the most central candidate), the
label-free counterpart of the quality-spread ten of §4.2, and :func:`odeval.labelfree.ireos_select`
(§3.5.2, stop-early pruning) ranks them with the kNN-subset approximation (§3.5.3, 250 neighbours). Above
``max_objects`` objects IREOS runs on a seeded subsample of the objects (every candidate restricted to it); the
result says so.

References
----------
H. O. Marques, R. J. G. B. Campello, J. Sander, A. Zimek. Internal evaluation of unsupervised outlier detection.
ACM TKDD 14(4), 2020, §3.4 (γ_max), §3.5.2 (model selection with pruning), §3.5.3 (kNN subsets), §4.2.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from odeval.labelfree.ireos import CLASSIFIERS, gamma_max_exceeds
from odeval.labelfree.selection import (
    Selection,
    SelectorInfo,
    get_selector,
    register_selector,
    spearman_matrix,
    weighable_candidates,
)

__all__ = ["GuardedSettings", "IreosPick", "guarded_choice", "guarded_selector",
           "prune_candidates", "pruned_ireos"]


@dataclass(frozen=True)
class GuardedSettings:
    """Parameters of the pruned IREOS and of the guarded rule.

    Attributes
    ----------
    threshold : float
        γ_max at or below which the IREOS pick is trusted (100: docs/model-selection.md, read off the optimum's
        γ_max on 51 variants, held out on 211 with the optimum and on the other variants with the pinned
        classifier).
    classifier : {"pinned", "optimum"}
        The separability classifier of the probe and of the ranking (as
        :attr:`odeval.labelfree.IREOSSettings.classifier`): the authors' reference code's ``"pinned"`` by default,
        as :func:`odeval.labelfree.ireos`; ``"optimum"`` is the exact KLR optimum the rule was first audited with.
    n_candidates : int
        Candidates IREOS ranks (10, as §4.2 of the paper).
    knn : int
        Neighbours per classifier of the kNN-subset approximation (§3.5.3; 250 as the paper); exact below knn + 2
        objects.
    max_objects : int
        Above this many objects IREOS runs on a seeded subsample of that size.
    C : float
        Margin-violation cost (100, the paper's experiments).
    workers : int
        Threads for the classifiers (the numba solver releases the GIL; results are the same for any count).
    rank_above_threshold : bool
        Rank the candidates by IREOS also where γ_max exceeds the threshold. Off by default: there IREOS was near
        random on the collection, the guarded rule takes the ensemble, and the ranking is the costly part (the
        index integrates every curve up to γ_max); a single probe at the threshold (:func:`gamma_max_exceeds`)
        decides the regime instead.
    """

    threshold: float = 100.0
    classifier: str = "pinned"
    n_candidates: int = 10
    knn: int = 250
    max_objects: int = 2000
    C: float = 100.0
    workers: int = 1
    rank_above_threshold: bool = False

    def __post_init__(self) -> None:
        if not self.threshold > 0:
            raise ValueError(f"threshold must be positive, got {self.threshold!r}")
        if self.classifier not in CLASSIFIERS:
            raise ValueError(f"classifier must be 'pinned' or 'optimum', got {self.classifier!r}")
        for name in ("n_candidates", "knn", "max_objects", "workers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < (2 if name == "n_candidates" else 1):
                raise ValueError(f"{name} must be a positive integer (n_candidates ≥ 2), got {value!r}")

    def identity(self) -> dict[str, Any]:
        """The settings that decide the rule's pick (all but ``workers``): what a stored pick's task id holds
        (:func:`odeval.bench.variant_step.plan_variant_tasks`)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "workers"}


@dataclass(frozen=True)
class IreosPick:
    """The outcome of :func:`pruned_ireos`.

    Attributes
    ----------
    best : int or None
        Row of the full candidate matrix IREOS ranks first (None when no candidate could be weighed).
    order : tuple of int
        The pruned candidates (rows of the full matrix), best first.
    gamma_max : float
        The γ_max of the search (§3.4); NaN when IREOS did not run.
    n_objects : int
        Objects IREOS saw (the subsample size above ``max_objects``).
    subsampled : bool
    bounds : tuple of (float, float)
        Final [lower, upper] bounds of each candidate's IREOS index in ``order`` (equal where it was evaluated
        completely; §3.5.2).
    above : bool
        True when the γ_max search would end above the threshold (then ``gamma_max`` is NaN unless the candidates
        were ranked anyway: ``rank_above_threshold``).
    excluded : tuple of (int, str)
        Candidates that cannot be weighed (constant scores, ...), never pruned in.
    note : str
    """

    best: int | None
    order: tuple[int, ...] = ()
    gamma_max: float = float("nan")
    n_objects: int = 0
    subsampled: bool = False
    above: bool = False
    excluded: tuple[tuple[int, str], ...] = field(default=(), repr=False)
    note: str = ""
    bounds: tuple[tuple[float, float], ...] = ()



def prune_candidates(scores: np.ndarray, n: int, *, usable: np.ndarray | None = None) -> np.ndarray:
    """``n`` candidates spread over the candidate space, without labels.

    Farthest-point sampling in the Spearman distance 1 − ρ (:func:`odeval.labelfree.selection.spearman_matrix`):
    start from the most central candidate (largest mean ρ to the others, the ``mc-spearman`` pick), then add the
    candidate farthest from those chosen (ties: the lower row). Only rows with ``usable`` True are chosen.

    Returns
    -------
    ndarray of int64
        Chosen rows, in the order they were chosen (all usable rows when there are at most ``n``).
    """
    S = np.asarray(scores, dtype=np.float64)
    ok = np.ones(S.shape[0], bool) if usable is None else np.asarray(usable, bool)
    rows = np.flatnonzero(ok)
    if rows.size <= n:
        return rows.astype(np.int64)
    M = spearman_matrix(S[rows])
    central = (M.sum(axis=1) - 1.0) / max(1, rows.size - 1)
    chosen = [int(np.argmax(central))]
    dist = 1.0 - M[chosen[0]]
    dist[chosen[0]] = -np.inf
    while len(chosen) < n:
        j = int(np.argmax(dist))
        chosen.append(j)
        dist = np.minimum(dist, 1.0 - M[j])
        dist[chosen] = -np.inf
    return rows[np.array(chosen, dtype=np.int64)]


def pruned_ireos(scores: np.ndarray, X: np.ndarray, *, seed: int = 0, settings: GuardedSettings = GuardedSettings(),
                 progress: Callable[[str, int], None] | None = None) -> IreosPick:
    """Rank a pruned set of the candidates by IREOS (m_cl = 1, Gaussian-scaled scores as weights, the classifier of
    ``settings``).

    Parameters
    ----------
    scores : ndarray of shape (R, N)
        Finite candidate scorings, higher = more outlying.
    X : ndarray of shape (N, d)
        The (prepared) data the candidates scored.
    seed : int
        Seed of the object subsample (above ``settings.max_objects``).
    settings : GuardedSettings
    progress : callable, optional
        ``progress(stage, classifiers so far)``, passed to :func:`odeval.labelfree.ireos_select`.
    """
    from odeval.labelfree.ireos import ireos_select

    S = np.asarray(scores, dtype=np.float64)
    Xd = np.asarray(X, dtype=np.float64)
    n = Xd.shape[0]
    subsampled = n > settings.max_objects
    if subsampled:
        rows = np.sort(np.random.default_rng(seed).choice(n, settings.max_objects, replace=False))
        S, Xd = S[:, rows], Xd[rows]
    use, excluded = weighable_candidates(S)
    if not use:
        return IreosPick(None, n_objects=Xd.shape[0], subsampled=subsampled, excluded=tuple(excluded),
                         note="no candidate has outlier weights: " + "; ".join(sorted({r for _, r in excluded})))
    usable = np.zeros(S.shape[0], bool)
    usable[[i for i, _ in use]] = True
    chosen = prune_candidates(S, settings.n_candidates, usable=usable)
    sols = dict(use)
    knn = settings.knn if Xd.shape[0] > settings.knn + 1 else None
    where = ((f", on a seeded subsample of {Xd.shape[0]} of {n} objects" if subsampled else "")
             + (f", kNN subsets of {knn}" if knn else ", exact"))
    if not settings.rank_above_threshold and gamma_max_exceeds(
            Xd, [sols[int(i)] for i in chosen], settings.threshold, C=settings.C, knn=knn, workers=settings.workers,
            progress=progress, classifier=settings.classifier):
        return IreosPick(None, (), float("nan"), Xd.shape[0], subsampled, True, tuple(excluded),
                         f"γ_max > {settings.threshold:g} (one probe{where}): candidates not ranked by IREOS, which "
                         "was near random in this regime on the Campos collection")
    res = ireos_select(Xd, [sols[int(i)] for i in chosen], C=settings.C, knn=knn, workers=settings.workers,
                       progress=progress, classifier=settings.classifier)
    order = tuple(int(chosen[i]) for i in res.order)
    note = f"IREOS on {len(chosen)} candidates spread over the candidate space{where}"
    bounds = tuple((float(res.lower[i]), float(res.upper[i])) for i in res.order)
    return IreosPick(order[0], order, float(res.gamma_max), Xd.shape[0], subsampled,
                     res.gamma_max > settings.threshold, tuple(excluded), note=note, bounds=bounds)


def guarded_choice(pick: IreosPick, ensemble: np.ndarray, *, threshold: float = GuardedSettings.threshold,
                   label: str = "ireos-guarded") -> Selection:
    """The guarded rule: the IREOS pick where γ_max ≤ ``threshold``, else the ensemble scoring (a Selection with
    ``scores`` set and the reason in ``note``)."""
    if pick.best is not None and np.isfinite(pick.gamma_max) and pick.gamma_max <= threshold:
        return Selection(label, pick.best, note=f"γ_max = {pick.gamma_max:.3g} ≤ {threshold:g}: the IREOS pick")
    if pick.above:
        why = (f"γ_max = {pick.gamma_max:.3g} > {threshold:g}" if np.isfinite(pick.gamma_max)
               else f"γ_max > {threshold:g}")
    else:
        why = pick.note
    return Selection(label, None, scores=ensemble, members=(), note=f"{why}: the ensemble instead")


def guarded_selector(settings: GuardedSettings = GuardedSettings(), label: str = "ireos-guarded"
                     ) -> Callable[..., Selection]:
    """A selector function (``fn(S, names, *, X, seed) -> Selection``) of the guarded rule with ``settings``."""
    def fn(S: np.ndarray, names: tuple[str, ...], *, X: Any = None, seed: int = 0) -> Selection:
        pick = pruned_ireos(S, X, seed=seed, settings=settings)
        ens = get_selector("ensemble").fn(S, names, X=None, seed=seed).scores
        return guarded_choice(pick, ens, threshold=settings.threshold, label=label)
    return fn


# Registered once, with the default settings; ``replace=True`` keeps a re-import (importlib mode) harmless.
register_selector(SelectorInfo(
    "ireos-guarded", guarded_selector(), "pick", True,
    "IREOS pick (m_cl = 1, the authors' pinned classifier, 10 candidates spread over the candidate space, kNN "
    "subsets of 250) where the γ_max search ends at or below 100, else the ensemble of all candidates "
    "(docs/model-selection.md)",
    "Marques et al., ACM TKDD 14(4) 2020, §3.4, §3.5.2; docs/model-selection.md, 'IREOS and γ_max', "
    "'IREOS with the pinned classifier'",
    default=False), replace=True)
