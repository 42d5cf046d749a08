"""Base class of every data model qgate writes (records, results, the report)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """Strict, documented data: unknown fields are errors, field order is the format."""

    model_config = ConfigDict(extra="forbid")
