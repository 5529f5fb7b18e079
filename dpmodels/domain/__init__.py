"""The public domain of a release: the variables a formula reads
(`dpmodels.domain.formula`), their axes (`dpmodels.domain.axes`: bounds and bins, or
declared levels) and the representative points of a bin
(`dpmodels.domain.representatives`).

The names of the module ``dpmodels.domain`` (now `dpmodels.domain.axes`) are found here too,
for scripts and files pickled before the package was split into layers.
"""

from __future__ import annotations

from ..core.old_paths import old_name


def __getattr__(name: str):
    return old_name(__name__, "dpmodels.domain.axes", name)
