"""Every class named ``*Report`` in the package derives from the report base
(``ReleaseReport``), so a report nobody registered is caught too.  What every
registered mechanism's report holds is checked by the mechanism contract
suite (tests/contracts/test_mechanism_contract.py, ``test_report``)."""

import importlib
import inspect
import pkgutil


import dpmodels as dpm
from dpmodels.core.report import ReleaseReport


EPSILON = 2.0


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


def _report_classes():
    out = {}
    for info in pkgutil.walk_packages(dpm.__path__, "dpmodels."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, ReleaseReport) and cls is not ReleaseReport:
                out[name] = cls
    return out


def test_the_noisy_fields_a_report_declares_are_its_fields():
    # the neighbour tests compare every other field: a misspelt name would mask nothing
    # and compare a noisy field (a failure), or leave a real one out silently (none here)
    from dataclasses import fields, is_dataclass

    declared = {}
    for name, cls in _report_classes().items():
        noisy = cls.NOISY_FIELDS
        if noisy is None:
            continue
        assert is_dataclass(cls), name
        names = {f.name for f in fields(cls)}
        assert set(noisy) <= names, (name, set(noisy) - names)
        declared[name] = noisy
    # the reports whose numbers the neighbour tests compare field by field
    assert {"PrivacyReport", "MomentsReport", "SampleAggregateReport", "LocalReport",
            "SmoothedSampleReport"} <= set(declared)
    assert declared["PrivacyReport"] == ("released_cells", "noisy_total")
