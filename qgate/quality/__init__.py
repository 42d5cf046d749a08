"""Quality suites (math, recall, divergence, lm-eval), statistics and gates.

The plug-in surface is the suite registry (qgate/profile/suites.py): a suite
is a `SuiteEntry` naming a `SuiteRunner`; the stage, the gates and the
reference cache loop over `registered()`.
"""

from __future__ import annotations

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
