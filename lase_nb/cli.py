"""Command line: ``lase-nb ask | run | record | report | sweep | notebooks | book`` (also ``python -m lase_nb``).

Errors a user can fix print one line (``lase-nb: error: ...``) and exit with status 2.
Strategy, data set and backend names accept hyphens or underscores (``lase_mv`` = ``lase-mv``,
``mmlu-pro`` = ``mmlu_pro``); the CLI prints them with hyphens (:mod:`lase_nb.names`).
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Sequence

from .backends.base import public_url
from .errors import ConfigError, LaseError

CACHE_HELP = "call cache: use (default), refresh (call again and overwrite) or replay (no model calls)"


def _backend_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", default="local", help="local (default), openai or gemini")
    p.add_argument("--model", default=None, help="model name; for --backend local: smollm2-135m (default), "
                   "organism (the default model with the trained adapter of data/organism), a model folder or a .gguf")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible server URL (vLLM, llama.cpp, Ollama)")
    p.add_argument("--concurrency", type=int, default=8, help="API calls in flight at once")
    p.add_argument("--timeout", type=float, default=None,
                   help="API backends: seconds one call may take at the server (default 60); an attempt sent "
                        "with k others may wait k + 1 times that, its turn in the server's queue")
    p.add_argument("--max-retries", type=int, default=None,
                   help="API backends: retries per call on 429/5xx, timeouts, dropped connections (default 4)")
    p.add_argument("--threads", type=int, default=None,
                   help="local backend: CPU threads (default: $OMP_NUM_THREADS when set, else every core)")
    p.add_argument("--device", default=None,
                   help="local backend: where the model runs: cpu (default), cuda, cuda:N, mps or auto (the first GPU "
                        "torch can use, else the CPU); a GPU needs a CUDA build of torch (docs/your_model.md)")
    p.add_argument("--dtype", default=None, choices=("auto", "float32", "bfloat16"),
                   help="local backend: the weights' number format (default auto: float32 unless the CPU "
                        "multiplies bfloat16 natively and benchmarks/README.md's agreement table allows it)")


def _dataset_args(p: argparse.ArgumentParser, data_help: str = "file/folder for the paper's data sets") -> None:
    """``--dataset`` and what it reads: the file, and for ``jsonl`` (your own file) its fields and answer kind."""
    from .datasets import ANSWER_KINDS
    p.add_argument("--data-path", default=None, help=data_help + "; your own file for --dataset jsonl")
    p.add_argument("--question-field", default=None, help="--dataset jsonl: the field holding the question (default question)")
    p.add_argument("--answer-field", default=None, help="--dataset jsonl: the field holding the gold answer (default answer)")
    p.add_argument("--answer-kind", default=None, choices=list(ANSWER_KINDS),
                   help="--dataset jsonl: how the answer is graded: number (as GSM8K's, the default), letter (an option "
                        "letter, as MMLU-Pro's) or text (free form, as MATH-500's)")
    p.add_argument("--options-field", default=None,
                   help="--dataset jsonl with --answer-kind letter: the field holding the list of options (default: none, "
                        "the question lists them itself)")


def _data_fields(args) -> dict[str, str] | None:
    """The ``jsonl`` fields the command line names (None for the other data sets, or when it names none)."""
    from .datasets import jsonl_fields
    typed = {k: getattr(args, f"{k}_field" if k != "kind" else "answer_kind", None)
             for k in ("question", "answer", "kind", "options")}
    if getattr(args, "dataset", None) == "jsonl":
        return jsonl_fields(**typed)
    return {k: v for k, v in typed.items() if v is not None} or None


def _load_problems(args, n: int | None, seed: int) -> list:
    """The problems ``--dataset`` names, with the command's data path, levels, split and fields."""
    from .datasets import load_dataset
    return load_dataset(args.dataset, args.data_path, n, seed, levels=getattr(args, "levels", None),
                        split=getattr(args, "split", None), fields=_data_fields(args))


def _canonical_names(args) -> None:
    """Replace the typed strategy, data set and backend names by their registry keys (either spelling)."""
    from .backends import BACKENDS
    from .names import resolve
    if getattr(args, "strategy", None) is not None:
        from .strategies import STRATEGIES
        args.strategy = resolve(args.strategy, STRATEGIES, "strategy")
    if getattr(args, "dataset", None) is not None:
        from .datasets import DATASETS
        args.dataset = resolve(args.dataset, DATASETS, "data set")
    if getattr(args, "backend", None) is not None:
        args.backend = resolve(args.backend, BACKENDS, "backend")


def _names(known) -> str:
    from .names import display
    return ", ".join(display(k) for k in known)


def _engine(args, cache: bool = True):
    from .backends import make_backend
    from .engine import Engine
    extra = {k: v for k, v in (("timeout", args.timeout), ("max_retries", args.max_retries)) if v is not None}
    if extra and args.backend == "local":
        raise ConfigError("--timeout and --max-retries apply to API backends (openai, gemini), not --backend local")
    if args.threads is not None:
        if args.backend != "local":
            raise ConfigError("--threads applies to --backend local (an API server sets its own threads)")
        if args.threads < 1:
            raise ConfigError(f"--threads must be a positive number of CPU threads (got {args.threads})")
        extra["threads"] = args.threads
    if getattr(args, "device", None) is not None:
        if args.backend != "local":
            raise ConfigError("--device applies to --backend local (an API server runs on its own GPUs; to scale "
                              "past one machine serve the model with vLLM or SGLang and pass --base-url)")
        extra["device"] = args.device
    if getattr(args, "dtype", None) is not None:
        if args.backend != "local":
            raise ConfigError("--dtype applies to --backend local (an API server picks its own number format)")
        extra["dtype"] = args.dtype
    backend = make_backend(args.backend, args.model, args.base_url, concurrency=args.concurrency, **extra)
    return Engine(backend, _open_cache(args) if cache else None)


def _fields_entry(args) -> dict:
    """``{"data_fields": ...}`` for a manifest of a ``jsonl`` run (what reloads its problems), else {}."""
    fields = _data_fields(args)
    return {"data_fields": fields} if fields and args.dataset == "jsonl" else {}


def _dtype_field(backend) -> dict:
    """``{"dtype": ...}`` for a manifest when the backend computes in a chosen number format, and
    ``{"device": ...}`` when a local model ran anywhere but the CPU."""
    dtype, device = getattr(backend, "dtype", None), getattr(backend, "device", None)
    return {**({"dtype": dtype} if dtype else {}), **({"device": device} if device and device != "cpu" else {})}


def _open_cache(args):
    """The call cache named by ``--cache`` / ``--cache-mode``, or a one-line error."""
    import sqlite3

    from .cache import CallCache
    try:
        return CallCache(args.cache, args.cache_mode)
    except sqlite3.Error as e:
        raise ConfigError(f"cannot open the call cache {args.cache or '(default)'} ({e}); "
                          f"pass --cache with a writable SQLite file path") from None


def _examples(args) -> int:
    """Worked examples per prompt: as given, else 2 for the embedded local model, 0 for the
    organism and for API backends."""
    from .strategies import default_examples
    return args.examples if args.examples is not None else default_examples(args.backend, args.model)


def cmd_ask(args) -> int:
    """One question through the pipeline's own single-agent step: the reply, then (when it has no
    ``\\boxed{}``) the answer-extraction step, exactly as ``run`` and LASE's leader do; then the
    answer's confidence (or why there is none) and what LASE's gate at its default thresholds would do."""
    from .answers import extract_answer, extract_boxed
    from .confidence import is_uncertain, measure
    from .runner import run_episode
    from .strategies import EXTRACT_ROLE, StrategyConfig, single
    _canonical_names(args)
    problem = _asked_problem(args)
    engine = _engine(args, cache=not args.no_cache)
    cfg = StrategyConfig(max_tokens=args.max_tokens, top_logprobs=args.top_logprobs,
                         examples=_examples(args), extract_answers=not args.no_extract).validate()
    result, made = run_episode(single(problem, cfg), engine)
    (_, gen), *rest = made
    print(gen.text.strip())
    print("-" * 60)
    source = "the reply's \\boxed{}"
    if rest:
        _, xgen = rest[-1]
        print(f"extraction step:   {xgen.text.strip()}")
        if result.answer is not None:
            source = "the answer-extraction step (the reply has no \\boxed{})"
            gen = xgen
        elif extract_answer(xgen.text, problem.kind, stated=True) is None:
            source = "nothing: the reply has no \\boxed{} and the extraction step wrote no answer"
        else:
            source = "nothing: the extraction step wrote a value the reply never states"
    elif result.answer is None:
        source = "nothing: no \\boxed{} in the reply" + ("" if cfg.extract_answers else " (--no-extract)")
    conf = measure(gen, problem.kind, stated=bool(rest)) if gen.tokens is not None else None
    print(f"answer:            {result.answer if result.answer is not None else '(none)'}   from {source}")
    if conf is not None and result.answer is not None and conf.lp_min is not None:
        print(f"exp(LP_min):       {math.exp(conf.lp_min):.4f}   (lowest answer-token probability)")
        print(f"H_max:             {conf.h_max:.4f} nats   (entropy: {conf.estimator})")
        print(f"answer tokens:     {conf.n_answer_tokens}, read from the {'extraction' if rest else 'reply'} call")
    elif result.answer is None:
        print("exp(LP_min), H_max: not measured (no answer to read them from)")
    elif conf is None:
        print("exp(LP_min), H_max: not measurable (no log-probabilities on the answer tokens from this backend)")
    else:
        print("exp(LP_min), H_max: not measurable (the answer's text matches no returned token)")
    if problem.gold:
        print(f"gold answer:       {problem.gold}   ({'right' if result.correct else 'wrong'})")
    d = StrategyConfig()
    sure = result.answer is not None and conf is not None and not is_uncertain(conf, d.tau_lp, d.tau_h)
    print(f"LASE's gate:       {'sure' if sure else 'unsure'} at its defaults (tau_lp {d.tau_lp:g}, tau_h {d.tau_h:g}): "
          + ("the leader's answer stands" if sure else "it would call the supporters"))
    for c, g in made:
        role = "extraction" if c.role == EXTRACT_ROLE else "reply"
        print(f"tokens ({role}):{' ' * (10 - len(role))}prompt {g.prompt_tokens}, completion {g.completion_tokens}"
              f"   ({g.backend}:{g.model}{', cached' if g.cached else ''}, {g.latency_s:.2f} s)")
    if extract_boxed(made[0][1].text) is None and cfg.examples < len(prompts_examples()):
        print(no_box_hint(1, 1, cfg.examples))
    return 0


def _asked_problem(args):
    """The question ``ask`` sends: the one typed, or problem ``--problem`` (1-based) of ``--dataset``."""
    from .types import Problem
    if args.dataset is None:
        if args.question is None:
            raise ConfigError("ask needs a question, or --dataset NAME (with --data-path for a file) to ask one of its "
                              "problems")
        for flag, value in (("--data-path", args.data_path), ("--question-field", args.question_field),
                            ("--answer-field", args.answer_field), ("--answer-kind", args.answer_kind)):
            if value is not None:
                raise ConfigError(f"{flag} goes with --dataset; a typed question takes --kind")
        return Problem("ask", args.question, gold="", kind=args.kind)
    if args.question is not None:
        raise ConfigError("ask takes a typed question or --dataset, not both")
    if args.problem < 1:
        raise ConfigError(f"--problem must be >= 1 (got {args.problem})")
    problems = _load_problems(args, None, args.seed)
    if args.problem > len(problems):
        raise ConfigError(f"--problem {args.problem}: the data set has {len(problems)} problems")
    problem = problems[args.problem - 1]
    print(f"problem {problem.id} ({args.dataset.replace('_', '-')}, {args.problem} of {len(problems)}):")
    print(problem.prompt_text())
    print("-" * 60)
    return problem


def prompts_examples() -> list:
    """The worked examples a prompt may carry (``--examples`` counts them)."""
    from .prompts import WORKED_EXAMPLES
    return list(WORKED_EXAMPLES["number"])


def no_box_hint(unboxed: int, replies: int, examples: int) -> str:
    """The line that says replies carried no ``\\boxed{}`` answer and what helps."""
    most = len(prompts_examples())
    return (f"note: {unboxed} of {replies} {'reply' if replies == 1 else 'replies'} carried no \\boxed{{}} answer "
            f"(with {examples} worked example{'' if examples == 1 else 's'}); a small model learns the format "
            f"from worked examples: pass --examples {most}")


def _strategy_config(args):
    from .strategies import StrategyConfig
    examples = _examples(args)
    cfg = StrategyConfig(tau_lp=args.tau_lp, tau_h=args.tau_h, full_chain=args.full_chain,
                         seed=args.seed, max_tokens=args.max_tokens,
                         supporter_max_tokens=args.supporter_max_tokens, down_final=args.down_final,
                         down_gate=args.down_gate, rounds=args.rounds, examples=examples,
                         extract_answers=not args.no_extract, top_logprobs=args.top_logprobs,
                         ensemble_k=args.group_k, ensemble_rounds=args.group_rounds,
                         ensemble_consensus=args.consensus)
    if args.samples is not None:
        cfg = replace(cfg, n_samples=args.samples, lase_chains=args.samples)
    return cfg.validate()


def cmd_run(args) -> int:
    from . import traces
    from .runner import run_problems
    from .strategies import GATED, get_strategy
    # Validate everything the user typed before anything is created on disk.
    _canonical_names(args)
    get_strategy(args.strategy)
    cfg = _strategy_config(args)
    if args.n is not None and args.n <= 0:
        raise ConfigError(f"--n must be a positive number of problems (got {args.n})")
    if args.window < 1:
        raise ConfigError(f"--window must be >= 1 problem in flight (got {args.window})")
    problems = _load_problems(args, args.n, args.seed)
    engine = _engine(args, cache=False)
    if args.strategy in GATED and not engine.backend.supports_logprobs:
        from .errors import LogprobsUnavailable
        raise LogprobsUnavailable(engine.backend.name, engine.backend.model, "backend has no logprobs")
    created = _missing_dirs(Path(args.out))
    out = traces.check_writable(args.out)  # before any model call is spent
    try:
        engine.cache = _open_cache(args)
        results = run_problems(args.strategy, problems, engine, cfg, window=args.window,
                               progress=not args.quiet)
    except BaseException:
        _remove_if_empty(created)  # a failed run leaves no empty output folder behind
        raise
    manifest = traces.provenance(
        command="lase-nb " + " ".join(shlex.quote(a) for a in _public_argv(args.argv or [])),
        strategy=args.strategy, backend=engine.backend.name, model=engine.backend.model,
        base_url=public_url(args.base_url), **_dtype_field(engine.backend), dataset=args.dataset,
        data_path=args.data_path, **_fields_entry(args), n=len(problems), seed=args.seed, levels=args.levels,
        **({"split": args.split} if args.split else {}), config=asdict(cfg),
        cache={"path": str(engine.cache.path), "mode": engine.cache.mode}, engine=asdict(engine.stats))
    traces.write_run(out, results, problems, manifest)
    print(summary_table(out).to_string())
    print(f"\nwrote {out} ({engine.stats.model_calls} model calls, {engine.stats.cache_hits} from cache)")
    unboxed, replies = unboxed_replies(results)
    if unboxed and cfg.examples < len(prompts_examples()):
        print(no_box_hint(unboxed, replies, cfg.examples))
    return 0


def unboxed_replies(results) -> tuple[int, int]:
    """(graded replies without a ``\\boxed{}`` answer, graded replies) over a run's calls; graded
    replies are every call but the supporters' notes and the answer-extraction steps."""
    from .answers import extract_boxed
    from .prompts import NOTE_ROLES
    from .strategies import EXTRACT_ROLE
    graded = [c for r in results for c in r.calls if c.role != EXTRACT_ROLE and c.role not in NOTE_ROLES]
    return sum(extract_boxed(c.text) is None for c in graded), len(graded)


def _missing_dirs(path: Path) -> list[Path]:
    """The folders ``path`` and its ancestors that do not exist yet (deepest first)."""
    out: list[Path] = []
    p = path.absolute()
    while not p.exists() and p != p.parent:
        out.append(p)
        p = p.parent
    return out


def _remove_if_empty(dirs: Sequence[Path]) -> None:
    """Remove the folders this run created (deepest first), stopping at the first that is not empty."""
    for d in dirs:
        try:
            d.rmdir()
        except OSError:
            return


def _public_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with every ``--base-url`` value passed through :func:`public_url` (for the manifest)."""
    out: list[str] = []
    for i, a in enumerate(argv):
        if i > 0 and argv[i - 1] == "--base-url":
            a = public_url(a) or a
        elif a.startswith("--base-url="):
            a = "--base-url=" + (public_url(a.split("=", 1)[1]) or "")
        out.append(a)
    return out


def summary_table(out):
    from .replay import summarize
    from .traces import load_run
    return summarize(load_run(out).problems)


def cmd_record(args) -> int:
    """A study in the layout every chapter reads: the plan (calls, tokens, dollars) first, then
    one run folder per strategy through the call cache (:mod:`lase_nb.study`)."""
    from . import study, traces
    from .schema import RecordingError
    from .backends import DEFAULT_MODELS
    from .costs import PRICES_PATH, cost_table, load_prices
    from .strategies import GATED, recorded
    _canonical_names(args)
    names = study.study_runs(args.strategies or recorded())
    cfg = _strategy_config(args)
    for flag, value, least in (("--n", args.n, 1), ("--window", args.window, 1), ("--pilot", args.pilot, 1),
                               ("--n-baselines", args.n_baselines, 1), ("--n-down-calibration", args.n_down_calibration, 0)):
        if value is not None and value < least:
            raise ConfigError(f"{flag} must be >= {least} (got {value})")
    problems = _load_problems(args, args.n, args.seed)
    capped = study.capped_note(args.n, len(problems), args.dataset, args.data_path)
    if capped:
        print(capped)
    baselines = problems[:args.n_baselines] if args.n_baselines else None
    cal = (study.down_calibration_problems(args.dataset, args.data_path, args.n_down_calibration, args.seed,
                                           baselines or problems, args.levels, args.split, fields=_data_fields(args))
           if "down" in names else [])
    plans = study.plan_runs(names, cfg, problems, baseline_problems=baselines, calibration=cal)
    model = args.model or DEFAULT_MODELS.get(args.backend, "")
    prices = load_prices(args.prices)
    price = prices.get(model)
    engine, out, created = None, Path(args.out), []
    if not args.dry_run or args.pilot:
        engine = _engine(args, cache=False)
        model = engine.backend.model
        price = prices.get(model, price)
        gated = sorted({p.strategy for p in plans} & GATED)
        if gated and not engine.backend.supports_logprobs:
            from .errors import LogprobsUnavailable
            raise LogprobsUnavailable(engine.backend.name, model, f"backend has no logprobs ({', '.join(gated)} gate on them)")
        created = _missing_dirs(Path(args.out))
        out = traces.check_writable(args.out)  # before any model call is spent
        engine.cache = _open_cache(args)
    min_prefix = price.min_cached_prefix if price is not None else 0
    if args.pilot:
        rates = study.pilot_rates(engine, plans, args.pilot, window=args.window, min_prefix=min_prefix)
    else:
        try:
            rates = study.rates_from_folder(args.rates or study.DEFAULT_RATES, min_prefix)
        except LaseError as e:
            if args.rates:
                raise
            if isinstance(e, RecordingError):
                print(f"note: no recorded rates for the plan ({e})")
            rates = None
    label = args.label or study.recorded_label(args.out) or model  # a second command keeps the study's label
    where = f"{args.backend}" + (f", {public_url(args.base_url)}" if args.base_url else "")
    header = (f"study {label!r}: {model} ({where}) on {args.dataset}, seed {args.seed}, "
              f"{len(problems)} problems -> {args.out}")
    table = study.plan_table(plans, rates, price)
    print(study.format_plan(table, rates, price, header, model=model, dataset=args.dataset))
    if price is None:
        print(f"dollars: no price for {model!r} in {args.prices or PRICES_PATH}; add it to a copy and pass --prices")
    if args.backend == "local":
        from .backends.local.files import bf16_note
        note = bf16_note(args.dtype)
        if note:
            print(note)
    if args.dry_run:
        print("dry run: nothing sent" + (" (the pilot's calls are in the cache)" if args.pilot else ""))
        return 0
    print(flush=True)
    fields = {"command": "lase-nb " + " ".join(shlex.quote(a) for a in _public_argv(args.argv or [])),
              "backend": engine.backend.name, "model": model, "base_url": public_url(args.base_url),
              "dataset": args.dataset, "data_path": args.data_path, **_fields_entry(args), "levels": args.levels,
              "seed": args.seed,
              "label": label, "split": args.split,
              "cache": {"path": str(engine.cache.path), "mode": engine.cache.mode}}
    fields.update(_dtype_field(engine.backend))
    if callable(getattr(engine.backend, "model_files", None)):  # a local model: its folder, adapters, sha256
        fields["model_files"] = engine.backend.model_files()
    fields = {k: v for k, v in fields.items() if v is not None or k in ("levels",)}
    try:
        done = study.record_study(engine, plans, out, fields, rates=rates, window=args.window,
                                  progress=not args.quiet, label=label)
    except BaseException:
        _remove_if_empty(created)
        raise
    import pandas as pd
    calls = pd.concat([traces_calls(results).assign(run=name) for name, results in done.items()], ignore_index=True)
    print("\ncost, tokens (every call of each run, a call two runs share counted in both; cached input as the "
          "provider reported it, else estimated):")
    print(study.whole_numbers(cost_table(calls, by="run", used_only=False, min_prefix=min_prefix).round(3)).to_string())
    if price is not None:
        print(f"\ncost, dollars at {price.label()}:")
        print(study.whole_numbers(cost_table(calls, price, unit="dollars", by="run", used_only=False).round(6)).to_string())
    print(f"\nwrote {out} ({engine.stats.model_calls} model calls, {engine.stats.cache_hits} from cache)")
    _print_report(out, args)
    unboxed, replies = unboxed_replies([r for results in done.values() for r in results])
    if unboxed and cfg.examples < len(prompts_examples()):
        print(no_box_hint(unboxed, replies, cfg.examples))
    return 0


def _print_report(out: Path, args) -> None:
    """The study's table (``lase-nb report``), printed and written to ``OUT/report.csv``."""
    from . import report
    reports, heads = report.study_reports([out], None, args.prices, args.tau_lp, args.tau_h)
    print("\n" + report.format_reports(reports, heads))
    print(f"wrote {report.to_csv(reports, Path(out) / 'report.csv')} (`lase-nb report {out}` prints it again)")


def traces_calls(results):
    """A run's calls table (:func:`lase_nb.traces.call_rows`) from its results."""
    import pandas as pd

    from .traces import call_rows
    return pd.DataFrame(call_rows(results))


def cmd_report(args) -> int:
    """Each study's table (:mod:`lase_nb.report`: chapter 04's comparison, the paired tests, calls,
    tokens and dollars per strategy), printed and written as one CSV."""
    from . import report
    from .confidence import check_thresholds
    check_thresholds(args.tau_lp, args.tau_h)  # before any study is read
    reports, heads = report.study_reports(args.studies, args.price, args.prices, args.tau_lp, args.tau_h)
    print(report.format_reports(reports, heads))
    print(f"\nwrote {report.to_csv(reports, args.csv)}")
    return 0


def cmd_sweep(args) -> int:
    from .confidence import check_thresholds
    from .replay import load_chains, sweep
    check_thresholds(args.tau_lp, args.tau_h)  # before the run is read
    chains = load_chains(args.run)
    table = sweep(chains, args.tau_lp, args.tau_h)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    out = Path(args.out) if args.out else Path(args.run) / "sweep.csv"
    table.to_csv(out, index=False)
    print(f"\nwrote {out}")
    return 0


def cmd_notebooks(args) -> int:
    from .book.execution import parse_value, run_notebooks
    if args.cell_timeout <= 0:
        raise ConfigError(f"--cell-timeout must be a positive number of seconds (got {args.cell_timeout})")
    params = {key: parse_value(value) for key, value in args.param or []}
    try:
        run_notebooks(args.names or None, params, Path(args.out), timeout=args.cell_timeout,
                      figures=Path(args.figures) if args.figures else None, jobs=args.jobs)
    except Exception as e:  # papermill's error: a chapter stopped on an error a user can fix is one line
        if getattr(e, "ename", None) not in _user_error_names():
            raise
        raise LaseError(f"the chapter stopped at cell {getattr(e, 'exec_count', '?')}: {e.ename}: {e.evalue} "
                        f"(the executed copy is in {args.out})") from None
    return 0


def _user_error_names() -> set[str]:
    """The names of the package's user-facing errors (:class:`lase_nb.errors.LaseError` and its
    subclasses): how a chapter's kernel reports one back through papermill."""
    from . import schema  # noqa: F401  (defines RecordingError)

    names, todo = set(), [LaseError]
    while todo:
        cls = todo.pop()
        names.add(cls.__name__)
        todo += cls.__subclasses__()
    return names


def cmd_book(args) -> int:
    from .book.html import build_book
    out = args.out or ("build/seminar" if args.seminar else "build/book")
    index = build_book(Path(args.executed), Path(out), mathjax_url=args.mathjax_url, seminar=args.seminar)
    print(f"wrote {index}")
    return 0


EXAMPLES_HELP = ("worked examples per prompt, recorded in the manifest (default: 2 for the local "
                 "model, which needs them to box its answers; 0 for API backends, as in the papers)")


def _group_args(p: argparse.ArgumentParser, d) -> None:
    """The supporter group's knobs (``lase-ensemble``)."""
    p.add_argument("--group-k", type=int, default=d.ensemble_k,
                   help=f"lase-ensemble: supporters per escalated stage (default {d.ensemble_k})")
    p.add_argument("--group-rounds", type=int, default=d.ensemble_rounds,
                   help=f"lase-ensemble: rounds in which each supporter reads the others' notes (default "
                        f"{d.ensemble_rounds}; 0 = independent notes)")
    p.add_argument("--consensus", default=d.ensemble_consensus, choices=["vote", "synthesis"],
                   help="lase-ensemble: the group's one note by a vote over verdict lines (default) or a moderator's synthesis")


def recorded_names() -> list[str]:
    """The run folders ``lase-nb record`` writes by default."""
    from .strategies import recorded
    return recorded()


def build_parser() -> argparse.ArgumentParser:
    from .datasets import DATASETS
    from .book.execution import CELL_TIMEOUT_S
    from .strategies import STRATEGIES, StrategyConfig
    d = StrategyConfig()
    ap = argparse.ArgumentParser(prog="lase-nb", description="Confidence-gated multi-agent reasoning (LASE).")
    sub = ap.add_subparsers(dest="cmd", required=True)

    a = sub.add_parser("ask", help="ask one question (typed, or a data set's problem); print answer, confidence and tokens")
    a.add_argument("question", nargs="?", default=None, help="the question (or pass --dataset to ask one of its problems)")
    _backend_args(a)
    a.add_argument("--kind", default="number", choices=["number", "math", "choice"], help="a typed question's answer kind")
    a.add_argument("--dataset", default=None, help=f"ask a problem of a data set instead ({_names(DATASETS)})")
    _dataset_args(a)
    a.add_argument("--problem", type=int, default=1, help="with --dataset: which problem, 1-based in file order (default 1)")
    a.add_argument("--seed", type=int, default=0, help="with --dataset: the seed of the option shuffles (GPQA, TruthfulQA)")
    a.add_argument("--max-tokens", type=int, default=192)
    a.add_argument("--top-logprobs", type=int, default=d.top_logprobs)
    a.add_argument("--examples", type=int, default=None, choices=[0, 1, 2], help=EXAMPLES_HELP)
    a.add_argument("--no-cache", action="store_true", help="always call the model")
    a.add_argument("--no-extract", action="store_true",
                   help="no answer-extraction step: a reply without \\boxed{} stays unanswered")
    a.add_argument("--cache", default=None, help="cache file (default $LASE_CACHE or ~/.cache/lase_nb)")
    a.add_argument("--cache-mode", default="use", help=CACHE_HELP)
    a.set_defaults(func=cmd_ask)

    r = sub.add_parser("run", help="run a strategy on a data set; write tidy tables and a manifest")
    r.add_argument("--strategy", required=True, help=f"{_names(STRATEGIES)} (hyphens or underscores)")
    _backend_args(r)
    r.add_argument("--dataset", default="arith", help=f"arith (default, generated); {_names(list(DATASETS)[1:])}")
    _dataset_args(r)
    r.add_argument("--n", type=int, default=None, help="number of problems")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--levels", type=int, nargs="+", default=None,
                   help="arith only: difficulty levels to mix, e.g. --levels 1 2 3 (default: 1)")
    r.add_argument("--split", choices=["train", "eval"], default=None,
                   help="arith only: draw from one part of the problem space, disjoint by template and numbers "
                        "(the organism trains on 'train'; evaluate it on 'eval')")
    r.add_argument("--out", required=True, help="output folder")
    r.add_argument("--full-chain", action="store_true", help="LASE: record every stage (for sweeps)")
    r.add_argument("--tau-lp", type=float, default=d.tau_lp, help="gate: min answer-token probability")
    r.add_argument("--tau-h", type=float, default=d.tau_h, help="gate: max answer-token entropy (nats)")
    r.add_argument("--samples", type=int, default=None, help="N for mv (default 7) and lase-mv (default 5)")
    r.add_argument("--down-final", default=d.down_final, help="DOWN final answer: vote or judge")
    r.add_argument("--down-gate", default=d.down_gate, choices=["mean-prob", "answer-span"],
                   help="DOWN's gate: its own mean token probability of the whole first response "
                        "(default), or LASE's answer-span gate (a labelled variant, 'down-answer-span')")
    r.add_argument("--rounds", type=int, default=d.rounds,
                   help=f"MAD / DOWN rounds in all, the first being the independent answers: MAD makes "
                        f"agents x rounds calls ({d.n_agents} x {d.rounds} = {d.n_agents * d.rounds}, "
                        f"Du et al.'s reference setting)")
    r.add_argument("--examples", type=int, default=None, choices=[0, 1, 2], help=EXAMPLES_HELP)
    r.add_argument("--no-extract", action="store_true",
                   help="no answer-extraction step: a leader response without \\boxed{} stays unanswered")
    r.add_argument("--top-logprobs", type=int, default=d.top_logprobs,
                   help="top-k alternatives per token for the entropy estimate of API backends")
    r.add_argument("--max-tokens", type=int, default=d.max_tokens, help="token cap of leader calls")
    r.add_argument("--supporter-max-tokens", type=int, default=d.supporter_max_tokens,
                   help="token cap of supporter calls")
    r.add_argument("--window", type=int, default=32, help="problems in flight at once")
    r.add_argument("--cache", default=None, help="cache file (default $LASE_CACHE or ~/.cache/lase_nb)")
    r.add_argument("--cache-mode", default="use", help=CACHE_HELP)
    _group_args(r, d)
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=cmd_run)

    rec = sub.add_parser("record", help="record a study (one run folder per strategy, the layout the chapters read); "
                                        "prints its plan (calls, tokens, dollars) first")
    _backend_args(rec)
    rec.add_argument("--out", required=True, help="study folder (one run folder per strategy goes under it)")
    rec.add_argument("--strategies", nargs="+", default=None,
                     help=f"run folders to record (default all: {_names(recorded_names())}; also lase-ensemble); "
                          f"lase = lase-full")
    rec.add_argument("--label", default=None, help="the study's name in tables and legends (default: the model)")
    rec.add_argument("--dataset", default="arith", help=f"arith (default, generated); {_names(list(DATASETS)[1:])}")
    _dataset_args(rec)
    rec.add_argument("--n", type=int, default=20, help="problems (default 20)")
    rec.add_argument("--n-baselines", type=int, default=None,
                     help="run every strategy but lase-full on the first N of the problems only (default: all)")
    rec.add_argument("--seed", type=int, default=0)
    rec.add_argument("--levels", type=int, nargs="+", default=None, help="arith only: difficulty levels to mix")
    rec.add_argument("--split", choices=["train", "eval"], default=None, help="arith only: one part of the problem space")
    rec.add_argument("--n-down-calibration", type=int, default=20,
                     help="problems, disjoint from the study's, on which DOWN's threshold is chosen (0: keep 0.8)")
    rec.add_argument("--tau-lp", type=float, default=d.tau_lp, help="gate: min answer-token probability")
    rec.add_argument("--tau-h", type=float, default=d.tau_h, help="gate: max answer-token entropy (nats)")
    rec.add_argument("--examples", type=int, default=None, choices=[0, 1, 2], help=EXAMPLES_HELP)
    rec.add_argument("--no-extract", action="store_true", help="no answer-extraction step")
    rec.add_argument("--top-logprobs", type=int, default=d.top_logprobs)
    rec.add_argument("--max-tokens", type=int, default=d.max_tokens, help="token cap of leader calls")
    rec.add_argument("--supporter-max-tokens", type=int, default=d.supporter_max_tokens)
    rec.add_argument("--window", type=int, default=32, help="problems in flight at once")
    rec.add_argument("--cache", default=None, help="cache file (default $LASE_CACHE or ~/.cache/lase_nb)")
    rec.add_argument("--cache-mode", default="use", help=CACHE_HELP)
    rec.add_argument("--prices", default=None, help="price sheet (JSON, dollars per million tokens; default data/prices.json)")
    rec.add_argument("--pilot", type=int, default=None,
                     help="estimate tokens from the first K problems of each run on your model (sent, then reused "
                          "from the cache) instead of the committed recording's rates")
    rec.add_argument("--rates", default=None, help="a recorded study whose tokens per call make the estimate "
                                                   "(default data/traces/arith-smollm2)")
    rec.add_argument("--dry-run", action="store_true", help="print the plan and stop (nothing is sent without --pilot)")
    _group_args(rec, d)
    rec.add_argument("--quiet", action="store_true", help="no progress bar")
    rec.set_defaults(func=cmd_record, samples=None, down_final=d.down_final, down_gate=d.down_gate,
                     rounds=d.rounds, full_chain=False)

    rp = sub.add_parser("report", help="a study's table to paste: accuracy with its interval, the paired difference "
                                       "from the single agent, calls, tokens and dollars per strategy (CSV too)")
    rp.add_argument("studies", nargs="+", metavar="STUDY", help="study folders (written by `lase-nb record`); several "
                                                                "are also shown side by side")
    rp.add_argument("--price", default=None, help="the price sheet's model to bill at (default: each study's model)")
    rp.add_argument("--prices", default=None, help="price sheet (JSON, dollars per million tokens; default data/prices.json)")
    rp.add_argument("--tau-lp", type=float, default=d.tau_lp, help="LASE's gate, replayed: min answer-token probability")
    rp.add_argument("--tau-h", type=float, default=d.tau_h, help="LASE's gate, replayed: max answer-token entropy (nats)")
    rp.add_argument("--csv", default="report.csv", help="the CSV to write (default report.csv in this folder)")
    rp.set_defaults(func=cmd_report)

    s = sub.add_parser("sweep", help="accuracy / tokens / escalation over thresholds from a full-chain run")
    s.add_argument("run", help="folder of a `lase-nb run --strategy lase --full-chain` run")
    s.add_argument("--tau-lp", type=float, nargs="+", default=[0.5, 0.6, 0.8, 0.9, 0.95])
    s.add_argument("--tau-h", type=float, nargs="+", default=[0.5])
    s.add_argument("--out", default=None, help="CSV path (default RUN/sweep.csv)")
    s.set_defaults(func=cmd_sweep)

    n = sub.add_parser("notebooks", help="execute the notebook collection with papermill")
    n.add_argument("names", nargs="*", help="notebook names or prefixes (default: all)")
    n.add_argument("-p", "--param", nargs=2, action="append", metavar=("KEY", "VALUE"))
    n.add_argument("--out", default="build/notebooks", help="folder for executed copies")
    n.add_argument("--figures", default=None,
                   help="folder for the chapters' figures (default: $LASE_FIGURES_DIR when set, else OUT/figures; "
                        "`make notebooks` passes figures/ to refresh the README's images); figures drawn from a "
                        "live model call go to OUT/figures, never into the committed figures/")
    n.add_argument("--cell-timeout", type=int, default=CELL_TIMEOUT_S,
                   help=f"seconds one cell may run before the chapter fails (default {CELL_TIMEOUT_S})")
    n.add_argument("--jobs", type=int, default=None,
                   help="chapters run at once, each in its own kernel (default: the CPU cores; 1: one after another)")
    n.set_defaults(func=cmd_notebooks)

    b = sub.add_parser("book", help="HTML book (index + one page per chapter) from the executed notebooks")
    b.add_argument("--executed", default="build/notebooks", help="folder of executed notebooks")
    b.add_argument("--out", default=None, help="folder for the HTML pages (default: build/book; build/seminar "
                                                "with --seminar)")
    b.add_argument("--seminar", action="store_true",
                   help="the seminar path alone: the sections tagged `seminar`, each page linking to its full "
                        "chapter (built beside it, under OUT/full)")
    b.add_argument("--mathjax-url", default=None,
                   help="MathJax script to typeset formulas with (default: none: formulas become MathML, "
                        "pages load nothing remote)")
    b.set_defaults(func=cmd_book)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = argv
    try:
        return args.func(args)
    except LaseError as e:
        print(f"lase-nb: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lase-nb: interrupted; finished calls are in the cache, rerun the same command to resume",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
