# ---
# jupyter:
#   jupytext:
#     cell_metadata_filter: tags,-all
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # A3. LASE live: the loop written from scratch (appendix to chapter 03)
#
# Chapter 03 reads recorded chains. This appendix runs LASE now, on chapter 03's walk-through
# problem, twice: once with a loop written here in a few lines, once with the package, and checks
# that the two make the same calls and reach the same answer. **Its numbers are not the
# recording's**: the episode runs with a small token cap per call (`episode_max_tokens`, so that it
# takes seconds on a laptop), while the recording ran with the library's caps (512 tokens for the
# leader, 384 for a supporter). A response cut at its cap can lose the end of its arithmetic, or
# its box, so the live answer and stop stage may differ from chapter 03's; the check here is that
# our loop and the package agree with each other, which holds at any cap.
#
# With the default `backend="local"` it runs the embedded model (at most seven calls, cached).

# %% tags=["parameters"]
backend = "local"  # local | openai | gemini
model = None  # None: the default model of the backend
base_url = None  # an OpenAI-compatible server, for the openai backend
concurrency = None  # API backends: calls in flight (default 8; 1 for a one-slot server)
timeout = None  # API backends: seconds one call may take (default 60)
dtype = None  # local backend: float32, bfloat16 or auto (None: auto, float32 unless the CPU has native bfloat16)
device = "cpu"  # local backend: cpu, cuda, cuda:N, mps or auto (docs/your_model.md, "Your GPU")
examples = None  # worked examples per prompt (None: 2 for the embedded model, 0 for API models; 2 helps a small model box its answers)
traces = "committed"  # the recording whose walk-through problem is run again; "committed": data/traces/arith-smollm2
tau_lp = 0.8  # gate: exp(LP_min) below this is uncertain
tau_h = 0.5  # gate: H_max (nats) above this is uncertain
seed = 0
run_episode = True  # False: skip the live calls (the page then only shows the code)
episode_max_tokens = 64  # token cap of each call of the episode (the agreement holds at any cap)
interactive = None  # this appendix makes no widgets

# %%
from lase_nb import prompts
from lase_nb import runs as run_store
from lase_nb.chapters import pipeline
from lase_nb.replay import chains_from_stages, replay

run = run_store.load_runs(traces, ["lase"], require=["lase"])["lase"]
chains = chains_from_stages(run.stages)
problems = run_store.problems_from_manifest(run.manifest)
pid = pipeline.pick_walkthrough(chains, tau_lp, tau_h)
problem = problems.get(pid)
recorded = replay(chains, tau_lp, tau_h).set_index("problem_id").loc[pid]
print(f"problem {pid}:", problem.prompt_text() if problem else "(question text unavailable)")
print(f"recorded (caps {run.manifest.get('config', {}).get('max_tokens')} / "
      f"{run.manifest.get('config', {}).get('supporter_max_tokens')} tokens): stops at stage {int(recorded['stop_stage'])} "
      f"with answer {recorded['answer']}")

# %% [markdown]
# ## A3.0 What a supporter reads
#
# The exact messages the devil's advocate received in chapter 03's walk-through chain (the
# collaborator and the expert get the same layout, plus the critique and the hints), built by
# `lase_nb.prompts` from the problem and the leader's recorded first answer:

# %%
if problem is not None:
    first = run.calls[(run.calls["problem_id"] == pid) & (run.calls["role"] == "leader") & (run.calls["stage"] == 0)]
    for m in prompts.supporter_messages(problem, "devil", first["text"].iloc[0]):
        print(f"[{m['role']}]\n{m['content']}\n")

# %% [markdown]
# ## A3.1 One LASE episode, written out
#
# Chapter 03's tables come from `lase_nb.strategies.lase`. **The method itself is a short loop**, written
# here from scratch with the package's prompt builders (`lase_nb.prompts`) and its engine (one call
# primitive for any backend): the leader answers; while its answer is uncertain ($U = 1$: no boxed
# answer, $\exp(LP_{min}) < \tau_{lp}$ or $H_{max} > \tau_h$), the next supporter writes a note (any
# boxed answer in it is withheld) and the leader revises. It stops at the first confident answer,
# or after the last supporter. A leader response without an answer gets the extraction step, and
# the gate reads the extracted answer (boxed, or stated as "The answer is 7"; a value the response
# never wrote is no answer).

# %%
from lase_nb.answers import reply_states, strip_boxed
from lase_nb.confidence import measure
from lase_nb.engine import Call
from lase_nb.strategies import NO_ANSWER


def lead(engine, cfg, t, messages, kind):
    """One leader call, plus the extraction step if its response has no answer: (text, confidence, tokens)."""
    (gen,) = engine.run([Call("leader", t, messages, cfg.params())])
    conf, spent = measure(gen, kind), gen.prompt_tokens + gen.completion_tokens
    if conf.answer is None and cfg.extract_answers:
        (x,) = engine.run([Call("extract", t, prompts.extract_messages(messages, gen.text), cfg.extract_params())])
        conf, spent = measure(x, kind, stated=True), spent + x.prompt_tokens + x.completion_tokens  # "The answer is 7" counts
        if conf.answer is not None and not reply_states(gen.text, conf.answer, kind):
            conf = NO_ANSWER  # a value the response never wrote is the step's invention, not its answer
    return gen.text, conf, spent


def lase_from_scratch(problem, engine, cfg):
    """One LASE episode: (stop stage, final answer, tokens spent: prompt + completion)."""
    ex, sup = cfg.examples, cfg.params(supporter=True)
    attempt, conf, spent = lead(engine, cfg, 0, prompts.solver_messages(problem, examples=ex), problem.kind)
    notes = {}
    for t, role in enumerate(cfg.supporter_order, start=1):
        if conf.answer is not None and conf.p_min >= cfg.tau_lp and conf.h_max <= cfg.tau_h:
            return t - 1, conf.answer, spent  # U = 0: confident, stop here
        critique = notes.get("devil") if role in ("collaborator", "expert") else None
        hints = notes.get("collaborator") if role == "expert" else None
        (note,) = engine.run([Call(role, t, prompts.supporter_messages(problem, role, attempt, critique, hints), sup)])
        notes[role], _ = strip_boxed(note.text)  # a supporter may not hand over an answer
        revise = prompts.revise_messages(problem, attempt, role, notes[role], examples=ex)
        attempt, conf, used = lead(engine, cfg, t, revise, problem.kind)
        spent += note.prompt_tokens + note.completion_tokens + used
    return len(cfg.supporter_order), conf.answer, spent  # no supporter left


# %% [markdown]
# Run it on chapter 03's walk-through problem, then let the package run LASE on the same problem with the
# same engine. They must agree on where LASE stops, what it answers and what it spends, and **the
# package must make no model call of its own**: every call it needs is already in the call cache,
# because our loop made exactly the same calls (same messages, same sampling parameters).

# %%
if run_episode and problem is not None:
    from lase_nb.live import live_config, live_engine
    from lase_nb.runner import run_problems

    engine = live_engine(backend, model, base_url, concurrency=concurrency, timeout=timeout, dtype=dtype, device=device)
    cfg1 = live_config(backend, model, examples=examples, tau_lp=tau_lp, tau_h=tau_h, seed=seed, max_tokens=episode_max_tokens)
    ours = lase_from_scratch(problem, engine, cfg1)
    calls_before = engine.stats.model_calls
    (package,) = run_problems("lase", [problem], engine, cfg1, progress=False)
    assert ours == (package.stop_stage, package.answer, package.prompt_tokens + package.completion_tokens), \
        (ours, package.stop_stage, package.answer)
    assert engine.stats.model_calls == calls_before, "the package made a call our loop did not"
    print(f"problem {problem.id}: our loop stops at stage {ours[0]} with answer {ours[1]} after {ours[2]} tokens; "
          f"lase_nb.strategies.lase agrees, with 0 new model calls")
else:
    print("episode skipped (run_episode=False, or the problem text is not available here)")

# %%
if run_episode and problem is not None:
    same = (ours[0], str(ours[1])) == (int(recorded["stop_stage"]), str(recorded["answer"]))
    print(f"live at {episode_max_tokens} tokens a call: stage {ours[0]}, answer {ours[1]}; recorded: stage "
          f"{int(recorded['stop_stage'])}, answer {recorded['answer']}: "
          + ("the same" if same else "different: these calls ran at a smaller cap than the recording's, so a reply "
                                     "can stop before its arithmetic or its box ends (set episode_max_tokens to the "
                                     "recording's cap to compare like with like)"))

# %% [markdown]
# Back to [chapter 03](03_lase_pipeline.ipynb).
