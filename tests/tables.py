"""Small hand-built tables of calls, stages and problems that the chapter tests share."""

from __future__ import annotations

import pandas as pd

NAN = float("nan")

def _call(pid, stage, role, reads=(), text="", answer=None, p=None, h=None, leaked=0, used=True,
          strategy="lase", agent=None, prompt=100, completion=10):
    return {"problem_id": pid, "strategy": strategy, "used": used, "role": role, "stage": stage,
            "agent": agent or role, "prompt_tokens": prompt, "completion_tokens": completion, "latency_s": 0.1,
            "cached": False, "finish_reason": "stop", "reads": list(reads), "text": text, "answer": answer,
            "p_min": p, "h_max": h, "leaked": leaked}

def lase_calls(pid="p1", stop=3):
    """A full LASE chain: leader, then (supporter, revision) x 3, with one leaking collaborator."""
    rows = [_call(pid, 0, "leader", text="3 + 4 = 7\n\\boxed{7}", answer="7", p=0.5, h=1.0)]
    notes = {"devil": ("leader",), "collaborator": ("leader", "devil"), "expert": ("leader", "devil", "collaborator")}
    for t, (role, reads) in enumerate(notes.items(), start=1):
        leak = "the answer is \\boxed{8}" if role == "collaborator" else "check the sum <carefully>"
        rows.append(_call(pid, t, role, reads, text=leak, leaked=int(role == "collaborator"), used=t <= stop))
        rows.append(_call(pid, t, "leader", (role,), text=f"revision {t}\n\\boxed{{8}}", answer="8",
                          p=0.95 if t >= 2 else 0.6, h=0.1, used=t <= stop))
    return pd.DataFrame(rows)

def stages_frame(rows):
    """rows: (pid, stage, answer, correct, p_min, h_max, cum_prompt, cum_completion)."""
    cols = ["problem_id", "stage", "answer", "correct", "p_min", "h_max", "prompt_tokens", "completion_tokens"]
    df = pd.DataFrame(rows, columns=cols)
    df["strategy"] = "lase"
    df["supporter"] = df["stage"].map({0: None, 1: "devil", 2: "collaborator", 3: "expert"})
    df["uncertain"] = False
    return df

def mad_calls(pid="m1", drop_read=False):
    rows = [_call(pid, 0, "debater", agent=f"agent{i}", strategy="mad") for i in range(3)]
    for t in (1, 2):
        for i in range(3):
            reads = [f"agent{j}" for j in range(3) if j != i]
            if drop_read and t == 2 and i == 0:
                reads = reads[:1]
            rows.append(_call(pid, t, "debater", reads, agent=f"agent{i}", strategy="mad"))
    return pd.DataFrame(rows)

def problems_frame(strategy, correct, ids=None, completion=10, prompt=100, **extra):
    ids = ids or [f"q{i}" for i in range(len(correct))]
    return pd.DataFrame({"problem_id": ids, "strategy": strategy, "correct": correct,
                         "prompt_tokens": prompt, "completion_tokens": completion,
                         "total_tokens": prompt + completion, **extra})

def mv_run():
    """Two problems, 3 samples each; p_a: 5, 6, 6 (gold 6); p_b: 1, 2, None with p 0.2/0.9 (gold 2)."""
    rows = []
    for pid, answers, ps in (("p_a", ["5", "6", "6"], [0.9, 0.5, 0.5]), ("p_b", ["1", "2", None], [0.2, 0.9, None])):
        for i, (a, p) in enumerate(zip(answers, ps)):
            rows.append(_call(pid, 0, "sample", answer=a, p=p, agent=f"sample{i}", strategy="mv",
                              prompt=100, completion=10 * (i + 1)))
    calls = pd.DataFrame(rows).iloc[::-1]  # order in the table must not matter
    probs = pd.DataFrame({"problem_id": ["p_a", "p_b"], "gold": ["6", "2"], "correct": [True, True]})
    return calls, probs
