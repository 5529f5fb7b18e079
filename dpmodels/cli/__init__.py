"""The ``dpmodels`` command line (`dpmodels.cli.commands`; ``python -m dpmodels``
is equivalent).

The names of the module ``dpmodels.cli`` (now `dpmodels.cli.commands`) are found here too,
for scripts and files pickled before the package was split into layers.
"""

from __future__ import annotations

from ..core.old_paths import old_name


def __getattr__(name: str):
    return old_name(__name__, "dpmodels.cli.commands", name)
