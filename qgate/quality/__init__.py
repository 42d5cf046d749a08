"""Quality suites (math, recall, divergence, lm-eval), their records and statistics.

The plug-in surface is the suite registry (qgate/profile/suites.py): a suite
is a `SuiteEntry` naming a `SuiteRunner`; the stage, the gates and the
reference cache loop over `registered()`. The surface below is loaded lazily:
importing `qgate.quality` (or any module in it) imports none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qgate.core.lazy import lazy_getattr

if TYPE_CHECKING:
    from qgate.profile.suites import (
        SuiteEntry,
        features_needed,
        features_used,
        register,
        registered,
        suite_entry,
        unregister,
    )
    from qgate.quality.runner import PairedRunner, SuiteContext, SuiteRunner

__all__ = [
    "PairedRunner",
    "SuiteContext",
    "SuiteEntry",
    "SuiteRunner",
    "features_needed",
    "features_used",
    "register",
    "registered",
    "suite_entry",
    "unregister",
]

_HOME = {
    **dict.fromkeys(("PairedRunner", "SuiteContext", "SuiteRunner"), "runner"),
    **dict.fromkeys(
        (
            "SuiteEntry",
            "features_needed",
            "features_used",
            "register",
            "registered",
            "suite_entry",
            "unregister",
        ),
        "qgate.profile.suites",
    ),
}

__getattr__ = lazy_getattr(__name__, _HOME)
