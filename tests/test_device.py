"""Where the local model runs (issue 65): ``--device`` (cpu by default; cuda, cuda:N, mps, auto) from
``ask``, ``run`` and ``record`` and the chapters' live engine to the model, its KV caches and the
scheduler, and through the routed organism to both of its models. The machines that run the tests
have no GPU: every path is taken with ``device="cpu"``, and a GPU asked of a torch that cannot reach
one is one line naming the fix (benchmarks/gpu_agreement.py compares a GPU with the CPU where one is)."""

from __future__ import annotations

import pytest
import torch

from lase_nb import cli
from lase_nb.backends import make_backend
from lase_nb.backends.local import CUDA_HINT, REVISION_DIR, open_local, resolve_device
from lase_nb.errors import ConfigError
from lase_nb.live import live_engine
from lase_nb.types import GenParams

NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")


def test_resolve_device_names_and_errors() -> None:
    assert resolve_device(None) == resolve_device("cpu") == resolve_device(" CPU ") == "cpu"
    mps = getattr(torch.backends, "mps", None)
    expect = "cuda" if torch.cuda.is_available() else "mps" if mps is not None and mps.is_available() else "cpu"
    assert resolve_device("auto") == expect
    with pytest.raises(ConfigError, match=r"unknown device 'tpu'; use one of cpu, cuda, cuda:N, mps, auto"):
        resolve_device("tpu")
    with pytest.raises(ConfigError, match="unknown device 'cuda:x'"):
        resolve_device("cuda:x")


@NO_CUDA
def test_a_gpu_this_torch_cannot_reach_is_one_line_with_the_fix(capsys) -> None:
    for name in ("cuda", "cuda:1"):
        with pytest.raises(ConfigError) as e:
            resolve_device(name)
        assert f"--device {name}: this torch sees no CUDA GPU" in str(e.value) and CUDA_HINT in str(e.value)
    rc = cli.main(["ask", "What is 2 + 2?", "--device", "cuda", "--no-cache"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "make setup TORCH_SPEC=" in err


def test_device_is_for_the_local_backend_only(capsys) -> None:
    rc = cli.main(["run", "--strategy", "single", "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1",
                   "--device", "cpu", "--out", "unused"])
    err = capsys.readouterr().err
    assert rc == 2 and "--device applies to --backend local" in err and "--base-url" in err


@pytest.mark.parametrize("argv", [["ask", "What is 2 + 2?"], ["run", "--strategy", "single", "--out", "x"],
                                  ["record", "--out", "x"]])
def test_every_command_passes_the_device_to_the_model_its_caches_and_the_scheduler(argv) -> None:
    args = cli.build_parser().parse_args([*argv, "--device", "cpu", "--threads", "1"])
    backend = cli._engine(args, cache=False).backend
    assert backend.device == "cpu" and "device='cpu'" in repr(backend)
    assert {p.device.type for p in backend._lm.parameters()} == {"cpu"}
    gen = backend.generate([{"role": "user", "content": "Say 4."}], GenParams(max_tokens=3))
    assert gen.completion_tokens >= 1 and gen.tokens is not None
    stored = [t for s in backend._loaded.prefixes._items.values() for t in _tensors(s)]
    assert stored and {t.device.type for t in stored} == {"cpu"}  # the prompts' KV caches live with the model


def _tensors(obj, depth: int = 0):
    """Every torch tensor inside ``obj`` (a stored cache entry: tuples, lists, objects)."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth < 6 and isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _tensors(x, depth + 1)
    elif depth < 6 and hasattr(obj, "__dict__"):
        for x in vars(obj).values():
            yield from _tensors(x, depth + 1)


def test_the_chapters_live_engine_and_make_backend_take_the_device() -> None:
    assert live_engine("local", device="cpu").backend.device == "cpu"
    assert make_backend("local", device="cpu", max_batch=2).device == "cpu"


@pytest.mark.skipif(not (REVISION_DIR / "adapter_model.safetensors").is_file(), reason="no revision adapter")
def test_the_routed_organism_puts_both_models_on_the_device() -> None:
    v6 = open_local("organism-v6", max_batch=2, device="cpu")
    assert v6.device == "cpu" and {b.device for b in v6.backends.values()} == {"cpu"}
    assert all({p.device.type for p in b._lm.parameters()} == {"cpu"} for b in v6.backends.values())
