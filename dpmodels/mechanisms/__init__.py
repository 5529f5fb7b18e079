"""The mechanisms: one module each for the histogram (with its bootstrap's
population and simulation), the noisy moments, the Newton and quantile steps,
feature selection, sample-and-aggregate, local randomization and smoothed samples.
Each reads rows only through `dpmodels.data`.

The names of the noise module ``dpmodels.mechanisms`` (now `dpmodels.core.noise`) are found here too,
for scripts and files pickled before the package was split into layers.
"""

from __future__ import annotations

from ..core.old_paths import old_name


def __getattr__(name: str):
    return old_name(__name__, "dpmodels.core.noise", name)
