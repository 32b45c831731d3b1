"""LLM configuration: slots, offline default, settings and environment, secrets."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from openai_chat_server import Reply, start_chat_server

from agentctx.config import Settings, load_settings
from agentctx.errors import ConfigError, MissingExtra
from agentctx.llm import LLMConfig, LLMTimeout, OpenAIChatLLM, UsageLedger, llm_from_config

SECRET = "sk-proj-do-not-leak-1234567890"


@pytest.mark.parametrize("config", [None, {}, {"provider": "none"}, LLMConfig()])
def test_no_provider_means_no_model(config: Any) -> None:
    assert llm_from_config(config) is None
    assert llm_from_config(config, "primary") is None


def test_slots_pick_their_models_and_fall_back_to_each_other() -> None:
    both = {
        "provider": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "fast_model": "small",
        "primary_model": "large",
    }
    fast = llm_from_config(both)
    primary = llm_from_config(both, "primary")
    assert isinstance(fast, OpenAIChatLLM) and isinstance(primary, OpenAIChatLLM)
    assert (fast.name, fast.slot) == ("openai:small", "fast")
    assert (primary.name, primary.slot) == ("openai:large", "primary")
    only_primary = {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "primary_model": "x"}
    assert llm_from_config(only_primary, "fast").name == "openai:x"  # type: ignore[union-attr]
    only_fast = LLMConfig(provider="openai", base_url="http://127.0.0.1:9/v1", fast_model="y")
    assert only_fast.model_for("primary") == "y"


@pytest.mark.parametrize(
    "config",
    [
        {"provider": "anthropic", "fast_model": "m"},
        {"provider": "openai"},  # no model in either slot
        {"provider": "openai", "fast_model": ""},
        {"provider": "openai", "fast_model": "m", "timeout": 0},
        {"provider": "openai", "fast_model": "m", "max_retries": -1},
        {"provider": "openai", "fast_model": "m", "temperature": 0.5},  # unknown key
    ],
)
def test_bad_configuration_is_a_config_error(config: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        llm_from_config(config)


def test_an_unknown_slot_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="slot"):
        llm_from_config({"provider": "none"}, "medium")  # type: ignore[arg-type]


def test_openai_without_key_or_endpoint_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="api_key"):
        llm_from_config({"provider": "openai", "fast_model": "gpt-4o-mini"})


def test_the_key_comes_from_config_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with start_chat_server(default=lambda body: Reply.text("ok")) as server:
        config = {"provider": "openai", "base_url": server.url, "fast_model": "m"}
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
        llm_from_config(config).complete([{"role": "user", "content": "hi"}])  # type: ignore[union-attr]
        llm_from_config({**config, "api_key": SECRET}).complete(  # type: ignore[union-attr]
            [{"role": "user", "content": "hi"}]
        )
        monkeypatch.delenv("OPENAI_API_KEY")
        llm_from_config(config).complete([{"role": "user", "content": "hi"}])  # type: ignore[union-attr]
        sent = [headers["authorization"] for headers in server.headers]
        assert sent == ["Bearer sk-from-env", f"Bearer {SECRET}", "Bearer unused"]


def test_config_timeouts_retries_and_ledger_reach_the_model() -> None:
    with start_chat_server() as server:
        server.script(Reply.server_error(502), Reply.text("ok"), Reply.slow(1.0), Reply.slow(1.0))
        ledger = UsageLedger()
        config = LLMConfig(
            provider="openai",
            base_url=server.url,
            primary_model="big",
            timeout=0.2,
            max_retries=1,
        )
        llm = llm_from_config(config, "primary", ledger=ledger)
        assert llm is not None
        assert llm.complete([{"role": "user", "content": "hi"}]).text == "ok"
        assert len(server.requests) == 2  # one retry of the 502
        with pytest.raises(LLMTimeout):
            llm.complete([{"role": "user", "content": "hi"}])
        assert len(server.requests) == 4  # the timeout was retried once too
        assert ledger.total(slot="primary", model="big").calls == 2
        assert ledger.total().failures == 1


def test_the_api_key_never_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    config = LLMConfig(provider="openai", api_key=SECRET, fast_model="m")
    monkeypatch.setenv(
        "AGENTCTX_LLM", json.dumps({"provider": "openai", "api_key": SECRET, "fast_model": "m"})
    )
    settings = load_settings()
    assert settings.llm == config
    shown = [
        repr(config),
        str(config),
        str(config.model_dump()),
        config.model_dump_json(),
        json.dumps(config.model_dump(mode="json")),
        repr(settings),
        settings.model_dump_json(),
        repr(llm_from_config(config)),
    ]
    for text in shown:
        assert SECRET not in text
    assert config.api_key is not None and config.api_key.get_secret_value() == SECRET


def test_settings_read_the_llm_block_from_yaml_and_environment(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert Settings().llm == LLMConfig()  # offline unless configured
    config_file = tmp_path / "agentctx.yaml"
    config_file.write_text(
        "llm:\n  provider: openai\n  base_url: http://localhost:11434/v1\n"
        "  fast_model: qwen2.5:7b\n  timeout: 20\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("AGENTCTX_CONFIG", str(config_file))
    llm = load_settings().llm
    assert llm.provider == "openai" and llm.model_for("primary") == "qwen2.5:7b"
    assert llm.timeout == 20
    monkeypatch.setenv("AGENTCTX_LLM", '{"provider": "none"}')
    assert load_settings().llm.provider == "none"  # the environment beats the file
    monkeypatch.setenv("AGENTCTX_LLM", '{"provider": "openai"}')
    with pytest.raises(ConfigError, match="fast_model or primary_model"):
        load_settings()


def test_importing_the_package_loads_no_sdk() -> None:
    code = (
        "import sys, agentctx, agentctx.llm, agentctx.config\n"
        "assert 'openai' not in sys.modules and 'jsonschema' not in sys.modules\n"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # what an uninstalled package looks like
    with pytest.raises(MissingExtra, match=r"pip install 'agentctx\[openai\]'"):
        OpenAIChatLLM("m", base_url="http://127.0.0.1:9/v1")
