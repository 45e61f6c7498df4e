"""Speed of the embedded local backend: load time, tokens/s one stream vs a batch of 8.

    python benchmarks/local_generate.py [--tokens 48] [--repeats 2] [--threads N] [--fresh-cache]

``--fresh-cache`` converts the GGUF into a temporary cache folder first, to time the one-off
conversion; otherwise the conversion is timed only if the user's cache is still empty. Greedy
decoding of 8 prompts that ask for long stories (so few stop before ``--tokens``); the rate is
completion tokens / wall time, prefill included. One stream runs the first two prompts one after
the other; the batch runs all 8 together. The best of ``--repeats`` runs is kept, since a shared
machine adds noise.
Last line: ``RESULT local_generate load_s=... tps_single=... tps_batch8=... ratio=...``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lase_nb.backends import local  # noqa: E402
from lase_nb.types import GenParams  # noqa: E402

TOPICS = ["the sea", "a mountain village", "how bread is made", "the planet Mars", "a lost cat",
          "why leaves fall", "a rainy market", "the first computer"]


def prompts() -> list[list[dict[str, str]]]:
    return [[{"role": "user", "content": f"Write a long, detailed story about {t}."}] for t in TOPICS]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=48, help="tokens generated per prompt")
    ap.add_argument("--repeats", type=int, default=2, help="runs per setting; the best is kept")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    ap.add_argument("--fresh-cache", action="store_true", help="time a conversion into a temp cache")
    ap.add_argument("--dtype", default="float32", choices=("auto", "float32", "bfloat16"),
                    help="the weights' number format (bfloat16 runs emulated on a CPU without native support)")
    args = ap.parse_args()

    t0 = time.perf_counter()
    import torch  # noqa: F401
    import transformers  # noqa: F401

    import_s = time.perf_counter() - t0
    print(f"import torch + transformers: {import_s:.1f} s")
    convert_s = float("nan")
    default_dir = local.model_cache_root() / local.DEFAULT_CACHE_NAME
    tmp = None
    if args.fresh_cache or not local.is_converted(default_dir):
        tmp = tempfile.TemporaryDirectory(prefix="lase-bench-") if args.fresh_cache else None
        target = Path(tmp.name) / local.DEFAULT_CACHE_NAME if tmp else default_dir
        t0 = time.perf_counter()
        local.convert_gguf(local.default_gguf_path(), target)
        convert_s = time.perf_counter() - t0
        print(f"first conversion (GGUF -> safetensors): {convert_s:.1f} s")
    folder = default_dir if tmp is None else target
    t0 = time.perf_counter()
    loaded = local.load_model(folder, reuse=False)
    load_s = time.perf_counter() - t0
    print(f"cached load (safetensors folder), first in process: {load_s:.2f} s")
    t0 = time.perf_counter()
    local.load_model(folder, reuse=False)
    load_warm_s = time.perf_counter() - t0
    print(f"cached load again (modeling code imported, files in page cache): {load_warm_s:.2f} s")

    backend = local.LocalBackend(str(folder), max_batch=8, threads=args.threads, dtype=args.dtype, emulated_ok=True)
    print(f"dtype: {backend.dtype} (native bfloat16 on this CPU: {local.native_bf16()})")
    print(f"torch threads: {torch.get_num_threads()}  (cores: {os.cpu_count()})")
    params = GenParams(max_tokens=args.tokens, temperature=0.0)
    reqs = [(m, params) for m in prompts()]
    backend.generate(reqs[0][0], GenParams(max_tokens=4))  # warm-up

    def rate(fn) -> float:
        best = 0.0
        for _ in range(args.repeats):
            t = time.perf_counter()
            gens = fn()
            dt = time.perf_counter() - t
            best = max(best, sum(g.completion_tokens for g in gens) / dt)
        return best

    tps_single = rate(lambda: [backend.generate(m, p) for m, p in reqs[:2]])
    print(f"one at a time: {tps_single:.1f} tok/s")
    tps_batch = rate(lambda: backend.generate_many(reqs))
    print(f"batch of 8:    {tps_batch:.1f} tok/s aggregate")
    ratio = tps_batch / tps_single
    del loaded
    if tmp is not None:
        tmp.cleanup()
    print(f"RESULT local_generate dtype={backend.dtype} load_s={load_s:.2f} load_warm_s={load_warm_s:.2f} "
          f"convert_s={convert_s:.1f} import_s={import_s:.1f} "
          f"tps_single={tps_single:.1f} tps_batch8={tps_batch:.1f} ratio={ratio:.2f}")


if __name__ == "__main__":
    main()
