from __future__ import annotations

import pytest

from qgate.core.redact import (
    REDACTED,
    is_secret_name,
    looks_like_token,
    redact_argv,
    redact_env,
    redact_text,
)


@pytest.mark.parametrize(
    "name",
    [
        "HF_TOKEN",
        "OPENAI_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "FTP_PASSWD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "BASIC_AUTH",
        "apiKey",
        "my-private-key",
        "GH_AUTH_TOKEN",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "VLLM_CPU_KVCACHE_SPACE",
        "TOKENIZERS_PARALLELISM",
        "KEYBOARD_LAYOUT",
        "MONKEY_PATCH",
        "MAX_TOKENS",
        "PATH",
        "PWD",
        "VLLM_ROCM_USE_AITER",
        "HOTKEYS",
    ],
)
def test_innocent_names(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    "value",
    [
        "hf_abcdefghijklmnopqrstuvwxyzABCD",
        "sk-proj-abcdefghijklmnopqrstuvwx",
        "ghp_0123456789abcdefghijklmnopqrstuvwxyz",
        "AKIAABCDEFGHIJKLMNOP",
        "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3A=",
        "3f9a1c27b8e4d6051a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081",
    ],
)
def test_token_shaped_values(value: str) -> None:
    assert looks_like_token(value)


@pytest.mark.parametrize(
    "value",
    [
        "2",
        "auto",
        "/usr/local/lib/python3.11/site-packages/some_long_package_name",
        "bfloat16",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "hf_short",
        "http://127.0.0.1:8000/v1",
        "FLASH_ATTN_TRITON_AMD_ENABLE_SOMETHING_LONG",
    ],
)
def test_ordinary_values(value: str) -> None:
    assert not looks_like_token(value)


def test_redact_env_by_name_value_and_extra_names() -> None:
    env = {
        "HF_TOKEN": "abc",
        "VLLM_CPU_KVCACHE_SPACE": "2",
        "INNOCENT": "sk-abcdefghijklmnopqrstuvwxyz0123",
        "TEAM_VAR": "plain",
        "EMPTY_TOKEN": "",
    }
    out = redact_env(env, extra_secret_names=["team_var"])
    assert out == {
        "HF_TOKEN": REDACTED,
        "VLLM_CPU_KVCACHE_SPACE": "2",
        "INNOCENT": REDACTED,
        "TEAM_VAR": REDACTED,
        "EMPTY_TOKEN": "",
    }
    assert env["HF_TOKEN"] == "abc", "the input is not modified"


def test_redact_text_replaces_given_secrets_and_known_shapes() -> None:
    text = (
        "key=s3cr3tvalue and again s3cr3tvalue; Authorization: Bearer abc.def-ghi_jkl; "
        "token hf_abcdefghijklmnopqrstuvwxyzABCD end"
    )
    out = redact_text(text, ["s3cr3tvalue", "en"])
    assert "s3cr3tvalue" not in out and "abc.def-ghi_jkl" not in out and "hf_abc" not in out
    assert out.count(REDACTED) == 4
    assert out.endswith(" end"), "secrets under 4 characters are not replaced everywhere"


def test_redact_argv_hides_secret_flag_values() -> None:
    argv = [
        "vllm",
        "serve",
        "--api-key",
        "k123",
        "--hf-token=t456",
        "--max-num-seqs",
        "8",
        "--model",
        "/m/with-s3cr3tvalue",
    ]
    assert redact_argv(argv, ["s3cr3tvalue"]) == [
        "vllm",
        "serve",
        "--api-key",
        REDACTED,
        f"--hf-token={REDACTED}",
        "--max-num-seqs",
        "8",
        "--model",
        f"/m/with-{REDACTED}",
    ]
