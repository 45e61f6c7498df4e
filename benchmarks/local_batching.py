"""Continuous batching on the embedded model: LASE over many problems at once vs one call at a time.

LASE with the **default thresholds** (``StrategyConfig()``: tau_lp 0.8, tau_h 0.5; pass
``--full-chain`` to force every stage instead) on ``--n`` default problems
(:func:`lase_nb.datasets.arithmetic_problems`), greedy, with no cache, so both settings really
decode every call:

* **batched**: ``run_problems(window=n)`` with ``LocalBackend(max_batch=--max-batch)``: the calls
  of all problems that are ready at the same stage go to the model together and are decoded
  with continuous batching (rows leave when done, waiting calls take their place) and the
  shared prompt prefix (system prompt, worked examples) encoded once;
* **single**: ``run_problems(window=1)`` with ``LocalBackend(max_batch=1)``: one call at a time
  (it also reuses the cached prompt prefixes, as any call of this backend does), on the first
  ``--single-n`` problems only (default 24): one call at a time decodes at a steady rate, so a
  part of the workload measures it as well as the whole and keeps the script within about ten
  minutes on two cores (the whole takes three times as long; ``--single-n 0`` runs all of it).

Both settings make the same calls on the problems they share (greedy decoding; the answers and
every call's text are compared), so the rate is completion tokens (every call, EOS included) over
wall time, prefill included. Peak memory is the process's ``ru_maxrss`` after both runs. Targets: ratio >= 3.5,
peak < 3 GiB.

``--llama-server`` adds the same LASE workload through ``--backend openai --base-url`` against a
llama.cpp server on the same GGUF (started here with ``python -m llama_cpp.server --model GGUF
--logits_all true`` when ``llama-cpp-python[server]`` is installed; otherwise the script says how
to install it and goes on without). ``--skip-single`` drops the one-at-a-time run.

    OMP_WAIT_POLICY=PASSIVE python benchmarks/local_batching.py [--n 64] [--single-n 24]
        [--max-tokens 128] [--max-batch 16] [--threads N] [--full-chain]
        [--llama-server [--llama-python PY]] [--skip-single] [--quick]

``--quick`` is a smoke test of the script (4 problems, 2 of them one at a time, 32-token replies:
under a minute on two idle cores); its figures mean nothing.

Last line: ``RESULT local_batching tps_batched=... tps_single=... ratio=... peak_mib=...``
(plus ``tps_llama=... vs_llama=...`` with ``--llama-server``).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from lase_nb.datasets import arithmetic_problems  # noqa: E402
from lase_nb.engine import Engine  # noqa: E402
from lase_nb.runner import run_problems  # noqa: E402
from lase_nb.strategies import ProblemResult, StrategyConfig  # noqa: E402
from lase_nb.types import GenParams  # noqa: E402


def completion_tokens(results: list[ProblemResult]) -> int:
    """Every decoded token: the calls used plus full-chain calls past the stop."""
    return sum(c.completion_tokens for r in results for c in r.calls + r.recording_calls)


def timed_run(backend, problems, cfg: StrategyConfig, window: int) -> tuple[list[ProblemResult], float, int]:
    """(results, wall seconds, model calls) of one uncached LASE run."""
    engine = Engine(backend, None)
    t0 = time.perf_counter()
    results = run_problems("lase", problems, engine, cfg, window=window, progress=False)
    return results, time.perf_counter() - t0, engine.stats.model_calls


def peak_mib() -> float:
    """Peak resident memory of this process (Linux reports ru_maxrss in KiB)."""
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024 if sys.platform != "darwin" else kib / 2**20


LLAMA_INSTALL = ("CMAKE_ARGS=\"-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON "
                 "-DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF\" "
                 "pip install 'llama-cpp-python[server]==0.3.36'  (a ~5 min build)")


def same_calls(a: list[ProblemResult], b: list[ProblemResult]) -> tuple[int, int]:
    """(calls with identical text, calls) over two runs of the same problems."""
    pairs = [(x, y) for ra, rb in zip(a, b) for x, y in zip(ra.calls + ra.recording_calls,
                                                            rb.calls + rb.recording_calls)]
    return sum(x.text == y.text for x, y in pairs), max(len(pairs), 1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def has_llama_server(python: str) -> bool:
    """Whether ``python`` can import llama-cpp-python's server (``llama_cpp`` and ``uvicorn``)."""
    if python == sys.executable:
        return all(importlib.util.find_spec(m) is not None for m in ("llama_cpp", "uvicorn"))
    try:
        return subprocess.run([python, "-c", "import llama_cpp, uvicorn"], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def llama_server_run(problems, cfg: StrategyConfig, threads: int, window: int, concurrency: int,
                     python: str = sys.executable) -> tuple[float, int, list[ProblemResult]] | None:
    """(tok/s, completion tokens, results) of the LASE run against a llama.cpp server started
    with ``python``, or None (with the install hint printed) when that interpreter lacks
    ``llama-cpp-python[server]``."""
    if not has_llama_server(python):
        print(f"llama.cpp server: {python} cannot import llama-cpp-python[server]; to compare, run\n"
              f"  {LLAMA_INSTALL}\n(or install it into another environment and pass its python "
              "with --llama-python)")
        return None
    from lase_nb.backends import make_backend
    from lase_nb.backends.local import default_gguf_path

    gguf, port = default_gguf_path(), free_port()
    cmd = [python, "-m", "llama_cpp.server", "--model", str(gguf), "--logits_all", "true",
           "--n_threads", str(threads), "--n_ctx", "4096", "--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.time() > deadline:
                    print(f"llama.cpp server did not start ({' '.join(cmd)})")
                    return None
                time.sleep(0.5)
        # the server decodes one request at a time and queues the rest: no per-attempt timeout
        # may expire (and retry) while a request waits its turn
        backend = make_backend("openai", model=gguf.name, base_url=f"http://127.0.0.1:{port}/v1",
                               concurrency=concurrency, timeout=3600)
        res, wall, _ = timed_run(backend, problems, cfg, window=window)
        tok = completion_tokens(res)
        return tok / wall, tok, res
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


def models_of(backend) -> list:
    """The local models behind a backend: itself, or each model a routed backend (organism-v6) holds."""
    return list(getattr(backend, "backends", {"": backend}).values())


def summed(backend, stats: str) -> dict:
    """A statistics dict of the backend's models, summed."""
    out: dict = {}
    for part in models_of(backend):
        for k, v in getattr(part, stats).items():
            out[k] = out.get(k, 0) + v
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=64, help="problems (default 64)")
    ap.add_argument("--max-tokens", type=int, default=StrategyConfig().max_tokens,
                    help="leader tokens per call; supporters get min(this, 80)")
    ap.add_argument("--model", default="smollm2-135m",
                    help="local model alias or folder; 'organism-v6' runs its two adapters routed by role "
                         "(compare it with 'organism' back to back: --skip-single --full-chain)")
    ap.add_argument("--max-batch", type=int, default=16, help="rows decoded together in the batched run")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    ap.add_argument("--dtype", default="float32", choices=("auto", "float32", "bfloat16"),
                    help="the weights' number format (bfloat16 runs emulated on a CPU without native support)")
    ap.add_argument("--full-chain", action="store_true", help="force every LASE stage (default: thresholds)")
    ap.add_argument("--llama-server", action="store_true",
                    help="also run the workload against a llama.cpp server on the same GGUF")
    ap.add_argument("--llama-python", default=sys.executable,
                    help="python with llama-cpp-python[server] installed (default: this one)")
    ap.add_argument("--skip-single", action="store_true", help="skip the one-call-at-a-time run")
    ap.add_argument("--single-n", type=int, default=24,
                    help="problems run one call at a time: the first N of --n (default 24; 0 = all)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: --n 4 --single-n 2 --max-tokens 32 (figures meaningless)")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.single_n, args.max_tokens = 4, 2, 32
    if args.n < 1 or args.single_n < 0:
        ap.error("--n must be >= 1 and --single-n >= 0")

    from lase_nb.backends.local import open_local
    from lase_nb.strategies import default_examples

    cfg = StrategyConfig(full_chain=args.full_chain, max_tokens=args.max_tokens, examples=default_examples("local", args.model),
                         supporter_max_tokens=min(StrategyConfig().supporter_max_tokens, args.max_tokens))
    problems = arithmetic_problems(args.n)
    t0 = time.perf_counter()
    batched = open_local(args.model, max_batch=args.max_batch, threads=args.threads, dtype=args.dtype, emulated_ok=True)
    single = open_local(args.model, max_batch=1, threads=args.threads, dtype=args.dtype, emulated_ok=True)  # shares the weights
    print(f"model loaded in {time.perf_counter() - t0:.1f} s; {args.n} problems, LASE "
          f"{'full chain' if args.full_chain else f'tau_lp={cfg.tau_lp} tau_h={cfg.tau_h}'}, "
          f"max_tokens={cfg.max_tokens}, supporters {cfg.supporter_max_tokens}, cores {os.cpu_count()}",
          flush=True)
    for part in models_of(batched):
        part.generate([{"role": "user", "content": "Hi"}], GenParams(max_tokens=4))  # warm-up
        part.clear_prefix_cache()  # both runs start without cached prompt prefixes
        part.prefix_stats.update(reused_tokens=0, encoded_tokens=0)  # the warm-up's do not count
        part.batch_stats.update(dict.fromkeys(part.batch_stats, 0))

    res_b, wall_b, calls_b = timed_run(batched, problems, cfg, window=args.n)
    tok_b = completion_tokens(res_b)
    tps_b = tok_b / wall_b
    st = summed(batched, "prefix_stats")
    print(f"batched (window {args.n}, max_batch {args.max_batch}): {calls_b} calls, {tok_b} tokens "
          f"in {wall_b:.1f} s = {tps_b:.1f} tok/s; prompt tokens from the prefix cache "
          f"{st['reused_tokens']}, encoded {st['encoded_tokens']}", flush=True)
    bs = summed(batched, "batch_stats")
    print(f"  {bs['steps']} decoding steps, {bs['row_steps'] / max(bs['steps'], 1):.1f} rows on average, "
          f"{1000 * bs['decode_s'] / max(bs['steps'], 1):.0f} ms a step; decoding {bs['decode_s']:.0f} s, "
          f"prefill {bs['prefill_s']:.0f} s", flush=True)
    acc = sum(r.correct for r in res_b) / len(res_b)
    print(f"accuracy {acc:.2f}; escalated {sum(bool(r.stop_stage) for r in res_b)}", flush=True)
    result = f"RESULT local_batching tps_batched={tps_b:.1f}"
    if not args.skip_single:
        for part in models_of(single):
            part.clear_prefix_cache()
        part = problems[: args.single_n or len(problems)]
        res_s, wall_s, calls_s = timed_run(single, part, cfg, window=1)
        tok_s = completion_tokens(res_s)
        tps_s = tok_s / wall_s
        print(f"single  (window 1, max_batch 1, the first {len(part)} problems):  {calls_s} calls, {tok_s} "
              f"tokens in {wall_s:.1f} s = {tps_s:.1f} tok/s", flush=True)
        ss = summed(single, "batch_stats")
        print(f"  {ss['steps']} decoding steps, {1000 * ss['decode_s'] / max(ss['steps'], 1):.0f} ms a step; "
              f"decoding {ss['decode_s']:.0f} s, prefill {ss['prefill_s']:.0f} s", flush=True)
        same = sum(a.answer == b.answer and a.stop_stage == b.stop_stage for a, b in zip(res_b, res_s))
        texts, ncalls = same_calls(res_b, res_s)
        ratio = tps_b / tps_s
        print(f"same answer and stop stage in both runs: {same}/{len(part)}; same call text "
              f"{texts}/{ncalls}")
        print(f"speed-up {ratio:.2f}x (target >= 3.5)")
        result += f" tps_single={tps_s:.1f} ratio={ratio:.2f}"
    peak = peak_mib()
    print(f"peak memory {peak:.0f} MiB (target < 3072)")
    result += f" peak_mib={peak:.0f}"
    if args.llama_server:
        threads = args.threads or os.cpu_count() or 1
        got = llama_server_run(problems, cfg, threads, window=args.n, concurrency=args.max_batch,
                               python=args.llama_python)
        if got is not None:
            tps_l, tok_l, res_l = got
            same = sum(a.answer == b.answer for a, b in zip(res_b, res_l))
            print(f"llama.cpp server (same GGUF, {threads} threads, concurrency {args.max_batch}): "
                  f"{tok_l} tokens = {tps_l:.1f} tok/s; local batched / server {tps_b / tps_l:.2f}x "
                  f"(target >= 1.0); same answer {same}/{len(problems)} (quantised weights differ)")
            result += f" tps_llama={tps_l:.1f} vs_llama={tps_b / tps_l:.2f}"
    print(result)


if __name__ == "__main__":
    main()
