"""Asking a life's probes (issue 44 item 2): at its start, and after its work and an idle pause.

Every life the run starts passes through `context.started` or `together.start_both`, which
call `LifeProbing.at_start` once the server is ready and `LifeProbing.at_end` before it
stops (not when the life failed). A side qgate does not start (an endpoint) passes through
`context.started` too: it is probed at qgate's first contact and after the idle pause, and
recorded as an endpoint, not a started life. The items are the perf probes'
(`math_probes`): the first `lives.probes` math items the reference answered correctly in its
quality stage once those records exist (a cached reference, or any life after the
reference's quality), else the first items of the set; the gate (qgate/perf/life_probes.py)
pairs them per item with the reference's own records. The records are kept in `records`,
in the order asked.

Those are the prompts the life's quality stage (and its start probes) asked already: where
the side's engine serves `cache_salt`, each probe set is salted by side, life, round,
purpose and moment and each ask apart (`probe_salt`, qgate/perf/salts.py), so the probe after
the pause prefills its whole prompt rather than reading the KV they wrote.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from qgate.core.records import Role
from qgate.core.serving import Runtime
from qgate.perf.client import make_session, run_loop
from qgate.perf.life_probes import LifeProbes, ProbeKind, is_endpoint, life_label, probe_salt
from qgate.perf.loadgen import Sender
from qgate.perf.probes import Probe, graded
from qgate.perf.rawhttp import RawClient
from qgate.perf.records import RequestRecord
from qgate.perf.runner import probe_spec
from qgate.perf.salts import life_salt
from qgate.profile import ANSWER_MAX_TOKENS, Profile
from qgate.quality.math_set import PROBED, long_prompt, math_items, short_prompt
from qgate.quality.stage import QualityOutput, runtime_headers
from qgate.runtime.causes import blamed_on

__all__ = ["LifeProbing", "ask", "endpoint_roles", "lives_note", "math_probes", "probe_params"]

log = logging.getLogger("qgate")


def math_probes(
    profile: Profile,
    quality: QualityOutput | None,
    reference: QualityOutput | None,
    n: int,
    preamble: str | None = None,
) -> list[Probe]:
    """`n` math items (short form) as probes: the first the reference answered correctly in
    its quality stage (then the ones it did not, when too few were right), the first of the
    set when its records are not known yet; with `quality`'s own answers as expected. With a
    `preamble`, the long form behind it (a perf scenario's shaped probes)."""
    spec = profile.quality.math
    if spec is None or n == 0:
        return []
    items = {i.id: i for i in math_items(spec)}
    ref_run = next((r for r in reference.runs if r.suite == PROBED), None) if reference else None
    if ref_run is not None:
        chosen = [r.id for r in ref_run.items if r.correct and r.id in items]
        chosen += [r.id for r in ref_run.items if not r.correct and r.id in items]
    else:
        chosen = list(items)
    own = next((r for r in quality.runs if r.suite == PROBED), None) if quality else None
    answers = {i.id: i.answer for i in own.items} if own is not None else {}
    return [
        Probe(
            i,
            [{"role": "user", "content": _prompt(items[i].question, preamble)}],
            answers.get(i),
            str(items[i].answer),
        )
        for i in chosen[:n]
    ]


def _prompt(question: str, preamble: str | None) -> str:
    return short_prompt(question) if preamble is None else long_prompt(preamble, question)


def lives_note(profile: Profile, lives: int, together: bool) -> str | None:
    """The plan's line on life probes: what each life asks and what it costs (None: off)."""
    spec, math = profile.lives, profile.quality.math
    if spec.probes == 0 or math is None:
        return None
    tokens = spec.probes * math.max_tokens
    idle = spec.idle_s
    pauses = (lives + 1) // 2 if together else lives
    after = (
        f" and, after its work, {idle:g} s idle then the same {spec.probes} again"
        + (
            " (side by side, the second side of a block pair before its last perf block)"
            if together
            else ""
        )
        + " (the first request after the pause is a probe)"
        if idle > 0
        else " (no idle probes: lives.idle_s 0)"
    )
    cost = f"at most ~{idle * pauses:,.0f} s of idle in all ({pauses} pause(s)" + (
        ", the two sides of a round pausing together; when perf runs, less the other side's"
        " last perf block, which each side's pause overlaps)"
        if together
        else ", one per life)"
    )
    ends = endpoint_roles(profile)
    who = "every life"
    if len(ends) == 2:
        who = "every side, though both are endpoints qgate does not start (each probed as found:"
        who += " its start is qgate's first contact),"
    elif ends:
        who = f"every life (the {ends[0]}, an endpoint qgate does not start, at qgate's first "
        who += "contact)"
    return (
        f"lives: {who} asks {spec.probes} math probe(s) one at a time at its start{after}; "
        f"per life at most {2 * tokens if idle > 0 else tokens:,} generated tokens"
        + (f" and {idle:g} s; for the {lives} lives planned {cost}" if idle > 0 else "")
        + f"; a candidate life losing more than {spec.max_flips} item(s) the reference "
        "answered right fails, and its perf round is kept out of the ratios"
    )


def endpoint_roles(profile: Profile) -> list[Role]:
    """The sides of `profile` qgate does not start (endpoints), in the order reference,
    candidate: their life probes are asked at qgate's first contact and after the pause."""
    roles: tuple[Role, Role] = ("reference", "candidate")
    return [r for r in roles if is_endpoint(profile, r)]


def probe_params(profile: Profile) -> dict[str, Any]:
    """The quality stage's sampling, as the perf probes send it."""
    math = profile.quality.math
    return {
        "temperature": 0.0,
        "seed": profile.quality.seed,
        "max_tokens": math.max_tokens if math else ANSWER_MAX_TOKENS,
    }


async def ask(
    base_url: str,
    model: str,
    probes: list[Probe],
    params: dict[str, Any],
    headers: dict[str, str] | None,
    timeout_s: float,
    salt: str | None = None,
) -> list[RequestRecord]:
    """Ask each probe in turn (streaming, the perf stage's request); their records in order.
    `salt`: the probe set's cache-salt scope, each ask salted apart within it (None: none)."""
    async with make_session(2, timeout_s) as session:
        raw = RawClient(base_url, timeout_s) if base_url.startswith("http://") else None
        sender = Sender(session, base_url.rstrip("/"), headers, t0=0, raw=raw)
        sender.start()
        for k, probe in enumerate(probes):
            spec = probe_spec(probe, model, params)
            if salt is not None:
                spec.payload["cache_salt"] = life_salt(salt, k)
            await sender.run(spec, time.perf_counter_ns() - sender.t0)
        if raw is not None:
            await raw.close()
    return sender.records()


Life = tuple[Profile, Runtime, Role, str, int, int, str]
"""A life as the probes see it: profile, runtime, role, side, life, round, purpose."""


@dataclass
class LifeProbing:
    """The run's life probes: what each life answered, and the reference's quality records
    (set once known: they pick the items). One per run, shared by all its contexts.

    A life's idle pause counts from the end of its last work (`worked`), so a pause the
    plan has to sit through anyway (the other side's perf block, side by side) is part of
    it, and only the rest of `lives.idle_s` is slept (`idle_now`, `at_end_of`).
    """

    records: list[LifeProbes] = field(default_factory=list)
    reference: QualityOutput | None = None
    own: dict[str, QualityOutput] = field(default_factory=dict)
    """Each side's quality records, once known (their answers are the probes' expected)."""
    quiet: dict[tuple[str, int], float] = field(default_factory=dict)
    """Per life (side, life), when its last work ended (time.monotonic), once known."""
    idled: set[tuple[str, int]] = field(default_factory=set)
    """The lives whose idle probes were asked (their end asks none)."""
    opened: dict[int, Life] = field(default_factory=dict)
    """The lives asked their start probes, by their runtime's id."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def quality_known(self, side: str, out: QualityOutput) -> None:
        """A side's quality records (the reference's pick the later lives' items)."""
        self.own[side] = out
        if side == "reference":
            self.reference = out

    def at_start(
        self,
        profile: Profile,
        runtime: Runtime,
        role: Role,
        side: str,
        life: int,
        round: int = 0,
        purpose: str = "life",
    ) -> None:
        """The start probes of a life just ready."""
        self.at_start_of([(profile, runtime, role, side, life, round, purpose)])

    def at_end(
        self,
        profile: Profile,
        runtime: Runtime,
        role: Role,
        side: str,
        life: int,
        round: int = 0,
        purpose: str = "life",
    ) -> None:
        """The idle probes of a life whose work is done: `lives.idle_s` of quiet, then ask."""
        self.at_end_of([(profile, runtime, role, side, life, round, purpose)])

    def worked(self, runtime: Runtime) -> None:
        """`runtime`'s life has just ended a piece of work: its quiet counts from now (a
        life never marked pauses the whole `lives.idle_s` at its end)."""
        life = self.opened.get(id(runtime))
        if life is not None:
            self.quiet[(life[3], life[4])] = time.monotonic()

    def settled(self, *runtimes: Runtime) -> None:
        """The run's verdict is a FAIL already and its profile stops once settled
        (`quality.stop: verdict`): these lives end without their idle pause and probes, which
        could only add a failed life to it."""
        for runtime in runtimes:
            life = self.opened.get(id(runtime))
            if life is not None:
                self.idled.add((life[3], life[4]))

    def idle_now(self, runtime: Runtime) -> None:
        """`runtime`'s life's idle probes now, before the rest of its work: its quiet since
        `worked` topped up to `lives.idle_s`; its end then asks none."""
        life = self.opened.get(id(runtime))
        if life is not None:
            self.at_end_of([life])

    def at_end_of(self, lives: list[Life]) -> None:
        """The idle probes of several lives that end together (side by side): one pause for
        all, as long as the life quiet for the shortest time still needs (a life whose
        quiet began earlier, `worked`, waits less), then each life's probes (the first
        request each server sees after its pause)."""
        lives = [x for x in lives if _idle_wanted(x[0]) and (x[3], x[4]) not in self.idled]
        if not lives:
            return
        now = time.monotonic()
        since = [min(now, self.quiet.get((x[3], x[4]), now)) for x in lives]
        rest = max(x[0].lives.idle_s - (now - s) for x, s in zip(lives, since, strict=True))
        rest = max(rest, 0.0)  # quiet long enough already (the other side's block covered it)
        log.info("life probes: %s idle %.0f s more, then the idle probes", _sides(lives), rest)
        if rest > 0:
            time.sleep(rest)
        asked = time.monotonic()
        self.idled.update((x[3], x[4]) for x in lives)
        self._each(lives, "idle", [asked - s for s in since])

    def at_start_of(self, lives: list[Life]) -> None:
        """The start probes of several lives ready together, asked of each at once."""
        for life in lives:
            self.opened[id(life[1])] = life
        self._each(lives, "start", [0.0] * len(lives))

    def _each(self, lives: list[Life], kind: ProbeKind, idle_s: list[float]) -> None:
        """Each life's probes of `kind`; several lives (side by side, each on its own cores)
        are asked at once, so the probes cost the run one life's time, not two."""
        if len(lives) == 1:
            self._ask(*lives[0], kind, idle_s[0])
        else:
            with ThreadPoolExecutor(len(lives), thread_name_prefix="qgate-life") as pool:
                for done in [
                    pool.submit(self._ask, *one, kind, idle)
                    for one, idle in zip(lives, idle_s, strict=True)
                ]:
                    done.result()

    def _steady_first(self, probes: list[Probe], side: str = "reference") -> list[Probe]:
        """The probes with the items the reference's own lives answered right first and those
        it missed last: the first request after a pause is the one the field's bug corrupts,
        and an item the reference itself misses there is its noise, never judged."""
        score: dict[str, int] = {}
        for p in self.records:
            if p.role == "reference":
                for r in p.requests:
                    if r.probe_id is not None and r.probe_truth is not None:
                        ok = graded(r)
                        mark = 0 if ok else 2  # right anywhere: steady first
                        score[r.probe_id] = min(score.get(r.probe_id, mark), mark)
        own = self.own.get(side)  # an item this side lost in its quality stage is not judged
        for run in own.runs if own is not None else []:
            if run.suite == PROBED:
                score.update({i.id: 2 for i in run.items if not i.correct})
        return sorted(probes, key=lambda p: score.get(p.id, 1))

    def _ask(
        self,
        profile: Profile,
        runtime: Runtime,
        role: Role,
        side: str,
        life: int,
        round: int,
        purpose: str,
        kind: ProbeKind,
        idle_s: float,
    ) -> None:
        probes = self._steady_first(
            math_probes(profile, self.own.get(side), self.reference, profile.lives.probes), side
        )
        if not probes:
            return
        salt = probe_salt(profile, role, side, life, round, purpose, kind)
        with blamed_on(runtime):
            requests = run_loop(
                ask(
                    runtime.base_url,
                    runtime.served_model,
                    probes,
                    probe_params(profile),
                    runtime_headers(runtime),
                    profile.engine.request_timeout_s,
                    salt,
                )
            )
        node = runtime.node_name
        record = LifeProbes(
            side=side,
            role=role,
            life=life,
            round=round,
            purpose=purpose,
            node=node,
            endpoint=is_endpoint(profile, role),
            kind=kind,
            idle_s=round_s(idle_s),
            requests=requests,
            cache_salt=salt,
        )
        with self._lock:
            self.records.append(record)
        right = sum(1 for r in requests if r.probe_truth is not None and graded(r))
        log.info("life probes: %s %s: %d/%d right", life_label(record), kind, right, len(requests))


def _idle_wanted(profile: Profile) -> bool:
    return (
        profile.lives.idle_s > 0 and profile.lives.probes > 0 and profile.quality.math is not None
    )


def _sides(lives: list[Life]) -> str:
    return " and ".join(x[3] for x in lives)


def round_s(seconds: float) -> float:
    """Seconds to the millisecond (records read better)."""
    return float(f"{seconds:.3f}")
