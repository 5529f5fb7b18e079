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
