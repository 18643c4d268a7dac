"""The one name of a candidate scoring: :class:`ScoringKey` (docs/architecture.md, "Scoring key").

A scoring is one detector configuration applied to one dataset: the method, its fixed parameters, the metric of
its kNN graph (empty for methods without one), the *setting* that varies along a study's axis — ``k`` for the
kNN family, any declared parameter for other detectors, several axes for a grid — and, for randomised
detectors, the seed. Every place that names a candidate or a unit (score tables, the store, the selectors, the
ensembles, the report) builds and reads names through this module, never by formatting strings itself.

Names
-----
``METHOD[(p=v,...)][[metric]][-SETTING][@seed]`` where SETTING is ``NNN`` (k alone, zero-padded to three
digits: ``LOF-010``, the names odeval has always printed) or ``a=v,b=w`` (other axes, sorted by name). The
parameters and the metric are written in full by :attr:`ScoringKey.name`; :func:`distinct_names` shortens a
*pool* of keys to the parts that tell its members apart (``LOF-010`` when LOF appears with one parameter set),
and :meth:`ScoringKey.parse` reads both forms (a part left out parses as empty).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ScoringKey", "distinct_names"]

Pairs = tuple[tuple[str, Any], ...]

# METHOD has no '-', '(', '[', '@'; the parameter list may hold anything but ')'; the metric anything but ']'
_NAME = re.compile(r"^(?P<method>[^-\[(@\s]+)(?:\((?P<params>[^)]*)\))?(?:\[(?P<metric>[^\]]*)\])?"
                   r"(?:-(?P<setting>[^@]+))?(?:@(?P<seed>-?\d+))?$")


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        # a string that would read back as another JSON value (e.g. "10", "true") is written quoted
        try:
            json.loads(value)
        except ValueError:
            return value
        return json.dumps(value)
    return json.dumps(value, sort_keys=True)


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _pairs(mapping: Mapping[str, Any] | Iterable[tuple[str, Any]] | None, what: str) -> Pairs:
    items = dict(mapping or {})
    for name in items:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"scoring key: {what} name {name!r} is not an identifier")
    return tuple(sorted(items.items()))


def _pairs_text(pairs: Pairs) -> str:
    return ",".join(f"{k}={_value_text(v)}" for k, v in pairs)


def _parse_pairs(text: str | None, name: str) -> Pairs:
    if not text:
        return ()
    out = []
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip().isidentifier():
            raise ValueError(f"scoring key {name!r}: {part!r} is not name=value")
        out.append((key.strip(), _parse_value(value.strip())))
    return tuple(sorted(out))


@dataclass(frozen=True)
class ScoringKey:
    """Method, fixed parameters, metric, the varying setting and the seed of one scoring.

    Parameters
    ----------
    method : str
        A registered detector name (``"LOF"``) or an import path (``"pkg.mod:Class"``).
    params : tuple of (name, value)
        The fixed parameters, sorted by name (build with :meth:`make` from a dict).
    metric : str
        The distance of the method's kNN graph; empty where the method has none.
    setting : tuple of (name, value)
        The values of the study's varying axes, sorted by name: ``(("k", 10),)`` for the kNN family, empty
        for a detector run at one configuration.
    seed : int or None
        The seed of a randomised detector's run; None for deterministic ones.
    """

    method: str
    params: Pairs = ()
    metric: str = ""
    setting: Pairs = ()
    seed: int | None = None

    @classmethod
    def make(cls, method: str, params: Mapping[str, Any] | None = None, *, metric: str = "",
             setting: Mapping[str, Any] | None = None, k: int | None = None, seed: int | None = None
             ) -> ScoringKey:
        """Build a key from dicts; ``k=`` is shorthand for ``setting={"k": k}``."""
        if not method or re.search(r"[-\[(@\s]", method):
            raise ValueError(f"scoring key: method name {method!r} is empty or contains '-', '(', '[', '@' or "
                             "a space")
        values = dict(setting or {})
        if k is not None:
            values["k"] = int(k)
        return cls(method, _pairs(params, "parameter"), metric or "", _pairs(values, "setting"),
                   None if seed is None else int(seed))

    @classmethod
    def from_params_json(cls, method: str, params_json: str | None, **kwargs: Any) -> ScoringKey:
        """A key whose fixed parameters come from the JSON object the store and study files keep."""
        params = json.loads(params_json) if params_json else {}
        if not isinstance(params, dict):
            raise ValueError(f"scoring key: parameters of {method} are not a JSON object: {params_json!r}")
        return cls.make(method, params, **kwargs)

    # ---------------------------------------------------------------------------------------- views
    @property
    def k(self) -> int | None:
        """The neighbourhood size of a kNN-family scoring; None when k is not part of the setting."""
        value = dict(self.setting).get("k")
        return None if value is None else int(value)

    @property
    def params_dict(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def params_json(self) -> str:
        """The fixed parameters as the store keeps them: ``json.dumps(params, sort_keys=True)``."""
        return json.dumps(dict(self.params), sort_keys=True)

    @property
    def configuration(self) -> ScoringKey:
        """The key without its setting and seed: what stays fixed along the study's axes."""
        return ScoringKey(self.method, self.params, self.metric)

    def with_setting(self, **values: Any) -> ScoringKey:
        merged = dict(self.setting) | values
        return ScoringKey(self.method, self.params, self.metric, _pairs(merged, "setting"), self.seed)

    # ---------------------------------------------------------------------------------------- names
    def label(self, *, params: bool = True, metric: bool = True) -> str:
        """The name, with the parameter list and the metric written only where asked (see :func:`distinct_names`)."""
        text = self.method
        if params and self.params:
            text += f"({_pairs_text(self.params)})"
        if metric and self.metric:
            text += f"[{self.metric}]"
        if self.setting:
            if len(self.setting) == 1 and self.setting[0][0] == "k":
                text += f"-{int(self.setting[0][1]):03d}"
            else:
                text += f"-{_pairs_text(self.setting)}"
        if self.seed is not None:
            text += f"@{self.seed}"
        return text

    @property
    def name(self) -> str:
        """The full, context-free name: ``LOF(variant=published)[euclidean]-010``."""
        return self.label()

    def __str__(self) -> str:
        return self.name

    @classmethod
    def parse(cls, name: str) -> ScoringKey:
        """The key of a name written by :meth:`label` / :attr:`name` / :func:`distinct_names`.

        Parts left out of a shortened name (parameters, metric) parse as empty. Raises ``ValueError`` naming the
        text when it does not follow the grammar of the module docstring.
        """
        text = str(name).strip()
        m = _NAME.match(text)
        if m is None:
            raise ValueError(f"scoring key: {text!r} is not METHOD[(params)][[metric]][-setting][@seed]")
        setting_text = m.group("setting")
        if setting_text is not None and setting_text.isdigit():
            setting: Pairs = (("k", int(setting_text)),)
        elif setting_text is not None and setting_text[:1] == "k" and setting_text[1:].isdigit():
            setting = (("k", int(setting_text[1:])),)  # the older ``METHOD-kNNN`` form
        else:
            setting = _parse_pairs(setting_text, text)
        seed = m.group("seed")
        return cls(m.group("method"), _parse_pairs(m.group("params"), text), m.group("metric") or "", setting,
                   None if seed is None else int(seed))


def distinct_names(keys: Sequence[ScoringKey]) -> list[str]:
    """Names of a pool of keys, as short as the pool allows.

    A method's parameter list is written only when the method appears with more than one parameter set in the
    pool, its metric only when it appears with more than one metric (the rule of odeval's candidate names since
    the first study store: ``LOF-010``, ``LOF(variant=elki-0.7.1)-010``).
    """
    params: dict[str, set[Pairs]] = {}
    metrics: dict[str, set[str]] = {}
    for key in keys:
        params.setdefault(key.method, set()).add(key.params)
        metrics.setdefault(key.method, set()).add(key.metric)
    return [key.label(params=len(params[key.method]) > 1, metric=len(metrics[key.method]) > 1) for key in keys]
