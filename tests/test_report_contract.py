"""Every mechanism's privacy report keeps one contract (``ReleaseReport``).

Parametrized over the mechanisms the registry declares (``MECHANISMS`` of
``test_engines_contract``, built from ``dpmodels.methods`` and
``dpmodels.routing``): a mechanism added there is checked here without a
line added.  Besides, every class named ``*Report`` in the package must
derive from the base, so a report nobody registered is caught too.
"""

import importlib
import inspect
import pkgutil
import warnings

import pytest

import dpmodels as dpm
from dpmodels.report import Release
from dpmodels.report import ReleaseReport

from .test_bad_inputs import FRAME
from .test_engines_contract import MECHANISMS, TABLE_KW, _fit, _table_formula, invoke

EPSILON = 2.0


def _report_of(obj):
    """The report of what a mechanism made: the model's whole one (``privacy``:
    a projected model's covers its selection and its histogram), its own, or
    its release's."""
    for holder, name in ((obj, "privacy"), (obj, "report"),
                         (getattr(obj, "release", None), "report")):
        report = getattr(holder, name, None)
        if report is not None:
            return report
    raise AssertionError(f"{type(obj).__name__} carries no report")


@pytest.mark.parametrize("mech", MECHANISMS, ids=[m.name for m in MECHANISMS])
def test_every_mechanism_reports_through_the_base(mech):
    kw = dict(TABLE_KW, epsilon=EPSILON, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        made = invoke(mech, _table_formula(mech), FRAME, kw)
        report = _report_of(made)
        assert isinstance(report, ReleaseReport), type(report)
        for name in ReleaseReport.FIELDS:
            assert hasattr(report, name), f"{type(report).__name__} has no {name}"
        # the guarantee the caller asked for, the public n, the seeded generator
        assert report.epsilon == EPSILON and report.private and report.is_finite
        assert report.n == len(FRAME) and report.seeded is True
        assert isinstance(report.mechanism, str) and report.mechanism
        rows = report.rows()
        assert rows and all(isinstance(k, str) and isinstance(v, str) for k, v in rows)
        text = str(report).splitlines()
        assert text[0] == report.title and set(text[1]) == {"="}
        assert any(f"epsilon = {EPSILON:g}" in line for line in text), text
        assert any("seeded generator" in line for line in text), text
        html = report._repr_html_()
        assert html.startswith("<table><caption>") and html.count("<tr>") == len(rows)
        # the release a model is fitted on keeps the release protocol
        release = getattr(made, "release", None)
        if release is not None:
            assert isinstance(release, Release), type(release)
            assert isinstance(release.report, ReleaseReport)
        # a model's results carry the same report
        res = _fit(made)
    if res is not made:
        assert getattr(res, "privacy", None) is report


def test_every_report_class_derives_from_the_base():
    found = []
    for info in pkgutil.walk_packages(dpm.__path__, "dpmodels."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if name.endswith("Report") and cls.__module__ == module.__name__:
                found.append(cls)
                assert issubclass(cls, ReleaseReport), f"{cls.__module__}.{name}"
                assert "rows" in vars(cls), f"{name} does not say what it released"
    # the seven reports of the ten mechanisms, and nothing counted twice
    assert len({c.__name__ for c in found}) >= 7, found
