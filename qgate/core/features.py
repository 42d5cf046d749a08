"""What an engine can do beyond the OpenAI API: the one vocabulary engines and suites share.

An engine declares the features it serves (engine registry); a suite or perf
check declares the features it needs. A suite that needs a feature the
profile's engine lacks is refused at validate time; a check that merely
profits from one (exact stream token counts) is reported as "not available
for ENGINE" instead of passing silently.
"""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["FEATURES", "Feature"]

Feature = Literal[
    "prompt_logprobs",  # scored prompt tokens' top-k logprobs (divergence)
    "token_ids",  # `return_token_ids` in streamed chunks (exact stream token counts)
    "tokenize",  # POST /tokenize at the server root (exact prompt token budgets)
    "min_tokens",  # forced output lengths (`min_tokens` + `ignore_eos`)
    "engine_metrics",  # Prometheus counters with the engine's names (prefix-cache hits, ...)
    "cache_salt",  # `cache_salt` keys a request's prefix-cache blocks apart (qgate/perf/salts.py)
]

FEATURES: tuple[Feature, ...] = get_args(Feature)
