"""A third-party plug-in of qgate: one suite, one engine and one executor, in one module.

tests/unit/core/test_plugins.py installs it as a throw-away distribution (this module plus a
`*.dist-info` folder whose entry_points.txt names the three objects) and runs `qgate`
with it; docs/extending.md shows its parts. It imports qgate's public contracts only.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from qgate.core.files import sha256_json, sha256_text
from qgate.core.provenance import ExecutorLife, ExecutorProvenance
from qgate.core.records import Role
from qgate.core.serving import Runtime
from qgate.profile import Profile
from qgate.profile.quality import AccuracyPolicy
from qgate.profile.suites import SuiteEntry
from qgate.quality.client import SuiteClient
from qgate.quality.records import ItemRecord, SuiteRun
from qgate.quality.runner import SuiteContext
from qgate.runtime.command_server import CommandServer
from qgate.runtime.factory import make_runtime
from qgate.runtime.lives import Lives


# --8<-- [start:suite]
class WordCount(AccuracyPolicy):
    """`quality.word_count`: sentences whose token count the server must equal their words."""

    sentences: list[str] = Field(min_length=1, description="Sentences to count.")


class WordCountRunner:
    """Asks the server's tokenizer how many tokens each sentence has; an item is correct
    when that equals the sentence's word count."""

    def data_digests(self, setting: WordCount, max_model_len: int | None) -> dict[str, str]:
        return {"word_count": sha256_json({"version": "1", "sentences": setting.sentences})}

    async def run(self, setting: WordCount, ctx: SuiteContext) -> list[SuiteRun]:
        start = time.perf_counter()
        async with SuiteClient(ctx.base_url, ctx.model, headers=ctx.headers) as client:
            counts = [await client.count_tokens(s) for s in setting.sentences]
        items = [
            ItemRecord(
                id=f"s{i}",
                prompt_sha256=sha256_text(sentence),
                output=str(n),
                answer=str(n),
                expected=str(len(sentence.split())),
                correct=n == len(sentence.split()),
            )
            for i, (sentence, n) in enumerate(zip(setting.sentences, counts, strict=True))
        ]
        return [
            SuiteRun(
                suite="word_count",
                role=ctx.role,
                data_sha256=self.data_digests(setting, ctx.max_model_len)["word_count"],
                items=items,
                wall_s=round(time.perf_counter() - start, 3),
            )
        ]


RUNNER = WordCountRunner()

WORD_COUNT = SuiteEntry(
    key="word_count",
    model=WordCount,
    runner="qgate_toy_plugin:RUNNER",
    needs=frozenset({"tokenize"}),
)
# --8<-- [end:suite]


# --8<-- [start:engine]
class ToyServer(CommandServer):
    """`engine.kind: toy_server`: an OpenAI-compatible server qgate starts from its own
    command line (here the module `qgate_toy_server`, installed beside this one)."""

    kind: ClassVar[str] = "toy_server"
    features = frozenset({"tokenize"})
    starts_process = True

    @classmethod
    def served_features(cls, launch: object) -> frozenset[str]:  # type: ignore[override]
        return cls.features

    @classmethod
    def spec_issues(cls, launch: object) -> list[tuple[tuple[str | int, ...], str]]:  # type: ignore[override]
        return []

    def configure(self, profile: Profile, role: Role) -> None:
        self.set_template(
            [
                "{python}",
                "-m",
                "qgate_toy_server",
                "--port",
                "{port}",
                "--served-name",
                "{served_name}",
            ]
        )


# --8<-- [end:engine]


# --8<-- [start:executor]
class LoggedLives(Lives):
    """`qgate run --executor logged --cluster DIR`: every life on this machine, as qgate
    makes it, and one line per life in DIR/lives.jsonl (where an executor for a batch
    system would submit a job and hand back a proxy to the server it starts). The report
    records what it says of its lives (`provenance`)."""

    def __init__(self, address: str, named_by: str) -> None:
        self.address = address
        self.log = Path(address) / "lives.jsonl"
        self.made: list[ExecutorLife] = []

    def runtime(
        self, profile: Profile, role: Role, model: Path, logs: Path, *, round: int = 0
    ) -> Runtime:
        with self.log.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"role": role, "engine": profile.engine_of(role).kind}) + "\n")
        self.made.append(ExecutorLife(side=role, where="this machine", round=round))
        return make_runtime(profile, role, model, logs)

    def provenance(self) -> ExecutorProvenance:
        return ExecutorProvenance(executor="logged", address=self.address, lives=self.made)


# --8<-- [end:executor]
