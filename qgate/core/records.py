"""Base class of every data model qgate writes (records, results, the report)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Role = Literal["reference", "candidate"]
"""Which of the two runtimes a record, a runtime or a result belongs to."""


class Record(BaseModel):
    """Strict, documented data: unknown fields are errors, field order is the format."""

    model_config = ConfigDict(extra="forbid")
