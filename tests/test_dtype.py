"""The local backend's number format (``--dtype``): detection, refusal, cache keys, manifests."""

from __future__ import annotations

import hashlib
import json

import pytest

from lase_nb.backends.local import files
from lase_nb.cache import call_key
from lase_nb.errors import ConfigError
from lase_nb.types import GenParams

MSGS = [{"role": "user", "content": "What is 2 + 2?"}]


def cpuinfo(tmp_path, flags: str):
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu sse2 avx2 {flags}\n\n")
    return path


def test_native_bf16_reads_the_cpu_flags(tmp_path):
    assert files.native_bf16(cpuinfo(tmp_path, "avx512f avx512_bf16"))
    assert files.native_bf16(cpuinfo(tmp_path, "amx_bf16 amx_tile"))
    assert not files.native_bf16(cpuinfo(tmp_path, "avx512f"))
    assert not files.native_bf16(tmp_path / "missing")


def test_auto_falls_back_and_bfloat16_is_refused_without_native_support(tmp_path):
    plain = cpuinfo(tmp_path, "avx512f")
    assert files.resolve_dtype("auto", cpuinfo=plain) == "float32"
    assert files.resolve_dtype(None, cpuinfo=plain) == "float32"
    with pytest.raises(ConfigError, match="no native bfloat16.*--dtype float32"):
        files.resolve_dtype("bfloat16", cpuinfo=plain)
    assert files.resolve_dtype("bf16", cpuinfo=plain, emulated_ok=True) == "bfloat16"
    with pytest.raises(ConfigError, match="unknown dtype"):
        files.resolve_dtype("float16", cpuinfo=plain)


def test_auto_on_a_native_cpu_follows_the_measured_choice(tmp_path):
    native = cpuinfo(tmp_path, "avx512_bf16")
    assert files.resolve_dtype("auto", cpuinfo=native) == files.AUTO_NATIVE_BF16
    assert files.resolve_dtype("bfloat16", cpuinfo=native) == "bfloat16"
    assert files.resolve_dtype("auto", device="cuda", cpuinfo=native) == "float32"


def test_float32_keys_are_todays_and_bfloat16_keys_differ():
    params = GenParams()
    payload = {"backend": "local", "model": "m", "messages": MSGS, "params": params.to_dict()}
    today = hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False,
                                      separators=(",", ":")).encode()).hexdigest()
    assert call_key("local", "m", MSGS, params) == today
    assert call_key("local", "m", MSGS, params, "float32") == today
    assert call_key("local", "m", MSGS, params, "bfloat16") != today


def test_cli_refuses_dtype_for_api_backends(capsys):
    from lase_nb.cli import main
    assert main(["ask", "What is 2 + 2?", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1",
                 "--dtype", "bfloat16"]) == 2
    assert "--dtype applies to --backend local" in capsys.readouterr().err


@pytest.mark.slow
def test_bfloat16_reaches_the_model_and_the_cache_key(tmp_path):
    """A bf16 backend (emulated where the CPU lacks it) computes in bf16, answers with sane
    statistics, and its calls are keyed apart from float32's."""
    import torch

    from lase_nb.backends.local import LocalBackend
    from lase_nb.engine import Engine

    bf = LocalBackend(dtype="bfloat16", emulated_ok=True, max_batch=2)
    fp = LocalBackend(dtype="float32", max_batch=2)
    assert bf.dtype == "bfloat16" and next(bf._lm.parameters()).dtype == torch.bfloat16
    assert fp.dtype == "float32" and next(fp._lm.parameters()).dtype == torch.float32
    params = GenParams(max_tokens=12, top_logprobs=5)
    g = bf.generate(MSGS, params)
    assert g.tokens and all(t.logprob <= 1e-6 and t.entropy is not None and t.entropy >= -1e-6 for t in g.tokens)
    assert Engine(bf).key(MSGS, params) != Engine(fp).key(MSGS, params)


@pytest.mark.slow
def test_run_manifest_names_the_dtype_or_the_cli_refuses_bf16(tmp_path, capsys):
    """On a CPU with native bf16 a ``--dtype bfloat16`` run's manifest says so; elsewhere the
    command refuses it with the fix; a float32 run's manifest says float32."""
    from lase_nb.cli import main
    common = ["run", "--strategy", "single", "--n", "1", "--max-tokens", "24", "--quiet",
              "--cache", str(tmp_path / "c.sqlite")]
    assert main(common + ["--dtype", "float32", "--out", str(tmp_path / "fp")]) == 0
    assert json.loads((tmp_path / "fp" / "manifest.json").read_text())["dtype"] == "float32"
    code = main(common + ["--dtype", "bfloat16", "--out", str(tmp_path / "bf")])
    if files.native_bf16():
        assert code == 0
        assert json.loads((tmp_path / "bf" / "manifest.json").read_text())["dtype"] == "bfloat16"
    else:
        assert code == 2 and "no native bfloat16" in capsys.readouterr().err
        assert not (tmp_path / "bf").exists()
