"""The precision profile: its schema (model.py and the modules it gathers), loading and checks.

The package's face is the schema: `from qgate.profile import Profile, MathSuite, ...`.
Loading lives in load.py (one file) and load_multi.py (several candidates), the checks
that need more than the schema in checks.py and engine_checks.py, the tables of what a
profile may name in suites.py (quality suites) and engines.py (engine kinds), the
generated reference in doc.py.
"""

from __future__ import annotations

from qgate.profile import model as _model
from qgate.profile.model import *  # noqa: F403  (the schema is the package's face)

__all__ = _model.__all__
