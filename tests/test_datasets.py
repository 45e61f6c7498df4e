"""Tests of lase_nb.datasets: the arithmetic generator and every loader, on files written here.

No data set of the paper is committed: each test writes a few rows in the set's published
format into ``tmp_path``.
"""

from __future__ import annotations

import csv
import json
import re
import sys
import types
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lase_nb import datasets as D
from lase_nb.errors import ConfigError, DataError
from lase_nb.types import KIND_CHOICE, KIND_MATH, KIND_NUMBER


# ----------------------------------------------------------------------------- helpers
def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


def recompute(start: int, ops: list) -> int:
    """Independent evaluation of the stored operation chain (exact integer arithmetic)."""
    x = start
    for op, v in ops:
        if op == "+":
            x += v
        elif op == "-":
            x -= v
        elif op == "*":
            x *= v
        elif op == "/":
            assert x % v == 0, f"inexact division {x}/{v}"
            x //= v
        else:
            raise AssertionError(f"unknown op {op!r}")
        assert x > 0
    return x


def ints_in(text: str) -> set[int]:
    return {int(t) for t in re.findall(r"\d+", text)}


# ----------------------------------------------------------------------------- generator
def test_arith_deterministic_and_seed_sensitive():
    a = D.arithmetic_problems(30, seed=3)
    b = D.arithmetic_problems(30, seed=3)
    c = D.arithmetic_problems(30, seed=4)
    assert [(p.id, p.question, p.gold, p.meta) for p in a] == [(p.id, p.question, p.gold, p.meta) for p in b]
    assert [p.question for p in a] != [p.question for p in c]


def test_arith_prefix_stable():
    small, big = D.arithmetic_problems(10, seed=1), D.arithmetic_problems(40, seed=1)
    assert [p.question for p in small] == [p.question for p in big[:10]]


def test_arith_levels_interleaved_and_ids():
    ps = D.arithmetic_problems(31, seed=0, levels=(1, 2, 3))
    assert [p.meta["level"] for p in ps[:6]] == [1, 2, 3, 1, 2, 3]
    counts = Counter(p.meta["level"] for p in ps)
    assert counts == {1: 11, 2: 10, 3: 10}
    ids = [p.id for p in ps]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"arith-L[123]-\d{4}", i) for i in ids)
    assert ps[0].id == "arith-L1-0000" and ps[3].id == "arith-L1-0001" and ps[30].id == "arith-L1-0010"


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_arith_gold_recomputed_from_meta_chain(seed):
    ps = D.arithmetic_problems(300, seed=seed, levels=(1, 2, 3))
    for p in ps:
        assert p.kind == KIND_NUMBER
        m = p.meta
        assert m["steps"] == m["level"] == len(m["ops"])
        assert p.gold == str(recompute(m["start"], m["ops"]))
        # the numbers in the text are exactly the chain's numbers: meta describes this question
        assert ints_in(p.question) == {m["start"], *(v for _, v in m["ops"])}, p.question
        assert p.question.rstrip().endswith("?")
        assert p.meta["topic"] in {"items", "money", "time"}


def test_arith_level1_small_operands_and_variety():
    ps = D.arithmetic_problems(300, seed=0, levels=(1,))
    assert {p.meta["level"] for p in ps} == {1}
    for p in ps:
        assert all(2 <= v <= 20 for v in [p.meta["start"]] + [v for _, v in p.meta["ops"]])
    ops = Counter(p.meta["ops"][0][0] for p in ps)
    assert set(ops) == {"+", "-", "*", "/"}
    assert {p.meta["topic"] for p in ps} == {"items", "money", "time"}
    assert len({p.meta["template"] for p in ps}) >= 8


def test_arith_questions_unique_within_level():
    ps = D.arithmetic_problems(600, seed=2, levels=(1, 2, 3))
    for lv in (1, 2, 3):
        qs = [p.question for p in ps if p.meta["level"] == lv]
        assert len(qs) == len(set(qs))


def test_arith_bad_arguments():
    assert D.arithmetic_problems(0) == []
    with pytest.raises(ConfigError):
        D.arithmetic_problems(-1)
    with pytest.raises(ConfigError):
        D.arithmetic_problems(5, levels=(1, 4))
    with pytest.raises(ConfigError):
        D.arithmetic_problems(5, levels=())


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), levels=st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=3))
def test_arith_property_any_seed(seed, levels):
    ps = D.arithmetic_problems(12, seed=seed, levels=levels)
    assert [p.meta["level"] for p in ps] == [levels[i % len(levels)] for i in range(12)]
    for p in ps:
        assert int(p.gold) == recompute(p.meta["start"], p.meta["ops"])


# ----------------------------------------------------------------------------- boxed helper
def test_local_boxed_finder():
    f = D._boxed_local
    assert f(r"so \boxed{\frac{1}{2}} and") == r"\frac{1}{2}"
    assert f(r"\boxed{1} then \boxed{\{3, 4\}}") == r"\{3, 4\}"
    assert f(r"$\boxed 5$") == "5"
    assert f(r"\fbox{x^{2}}") == "x^{2}"
    assert f("no box here") is None
    assert f(r"\boxed{2} \boxed{unclosed") == "2"


# ----------------------------------------------------------------------------- MATH-500
def math500_rows():
    return [
        {"problem": "What is $1+1$?", "solution": "It is $\\boxed{2}$.", "answer": "2",
         "subject": "Prealgebra", "level": 1, "unique_id": "test/prealgebra/1.json"},
        {"problem": "Simplify $\\sqrt{18}$.", "solution": "... $\\boxed{3\\sqrt{2}}$", "answer": "3\\sqrt{2}",
         "subject": "Algebra", "level": 3},
    ]


def test_math500_loads(tmp_path):
    ps = D.load_math500(write_jsonl(tmp_path / "test.jsonl", math500_rows()))
    assert [p.kind for p in ps] == [KIND_MATH, KIND_MATH]
    assert ps[0].id == "math500-test/prealgebra/1.json" and ps[1].id == "math500-0001"
    assert ps[1].gold == "3\\sqrt{2}" and ps[1].meta["subject"] == "Algebra"


def test_math500_missing_field_names_file_line_field(tmp_path):
    rows = math500_rows()
    del rows[1]["answer"]
    f = write_jsonl(tmp_path / "m.jsonl", rows)
    with pytest.raises(DataError) as e:
        D.load_math500(f)
    msg = str(e.value)
    assert str(f) in msg and "line 2" in msg and "'answer'" in msg


def test_math500_invalid_json_and_empty(tmp_path):
    f = write_jsonl(tmp_path / "m.jsonl", [math500_rows()[0], "", "{not json"])
    with pytest.raises(DataError, match=r"m\.jsonl: line 3: invalid JSON"):
        D.load_math500(f)
    (tmp_path / "e.jsonl").write_text("\n \n")
    with pytest.raises(DataError, match="empty"):
        D.load_math500(tmp_path / "e.jsonl")
    with pytest.raises(DataError, match="no such file"):
        D.load_math500(tmp_path / "missing.jsonl")
    f = write_jsonl(tmp_path / "n.jsonl", ["[1, 2]"])
    with pytest.raises(DataError, match="line 1.*JSON object"):
        D.load_math500(f)


# ----------------------------------------------------------------------------- MATH level 5
def write_math_dir(root: Path) -> Path:
    test = root / "test"
    files = {
        "algebra/1.json": {"problem": "A1", "level": "Level 5", "type": "Algebra",
                           "solution": "First \\boxed{3}, finally $\\boxed{\\frac{1}{2}}$."},
        "algebra/2.json": {"problem": "A2", "level": "Level 3", "type": "Algebra",
                           "solution": "$\\boxed{7}$"},
        "geometry/10.json": {"problem": "G10", "level": "Level 5", "type": "Geometry",
                             "solution": "$\\boxed{10\\pi}$"},
        "geometry/9.json": {"problem": "G9", "level": "Level 5", "type": "Geometry",
                            "solution": "$\\boxed{9}$"},
        "geometry/11.json": {"problem": "G11", "level": "Level ?", "type": "Geometry",
                             "solution": "no box, but not level 5 so never read"},
    }
    for rel, rec in files.items():
        (test / rel).parent.mkdir(parents=True, exist_ok=True)
        (test / rel).write_text(json.dumps(rec))
    return test


def test_math_level5_directory(tmp_path):
    ps = D.load_math_level5(write_math_dir(tmp_path))
    assert [p.question for p in ps] == ["A1", "G9", "G10"]  # filtered, natural order
    assert [p.gold for p in ps] == ["\\frac{1}{2}", "9", "10\\pi"]
    assert ps[0].id == "math-algebra-1" and ps[0].kind == KIND_MATH
    assert ps[2].meta["type"] == "Geometry" and ps[2].meta["level"] == "Level 5"


def test_math_level5_errors(tmp_path):
    test = write_math_dir(tmp_path)
    bad = test / "prealgebra" / "3.json"
    bad.parent.mkdir()
    bad.write_text(json.dumps({"problem": "P", "level": "Level 5", "solution": "answer is 4"}))
    with pytest.raises(DataError) as e:
        D.load_math_level5(test)
    assert str(bad) in str(e.value) and "'solution'" in str(e.value)
    bad.write_text(json.dumps({"problem": "P", "level": "Level 5"}))
    with pytest.raises(DataError, match=r"3\.json: field 'solution': missing"):
        D.load_math_level5(test)
    bad.write_text("{oops")
    with pytest.raises(DataError, match=r"3\.json: line 1: invalid JSON"):
        D.load_math_level5(test)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no .json files"):
        D.load_math_level5(tmp_path / "empty")
    only = tmp_path / "low"
    only.mkdir()
    (only / "1.json").write_text(json.dumps({"problem": "x", "level": "Level 1", "solution": "\\boxed{1}"}))
    with pytest.raises(DataError, match="no problems with level 'Level 5'"):
        D.load_math_level5(only)


def test_math_level5_jsonl_file(tmp_path):
    rows = [{"problem": "Q1", "level": "Level 5", "type": "Algebra", "solution": "\\boxed{x+1}"},
            {"problem": "Q2", "level": "Level 2", "type": "Algebra", "solution": "\\boxed{2}"},
            {"problem": "Q3", "level": "Level 5", "type": "Algebra"}]
    f = write_jsonl(tmp_path / "math.jsonl", rows)
    with pytest.raises(DataError, match=r"line 3: field 'solution': missing"):
        D.load_math_level5(f)
    f = write_jsonl(tmp_path / "math.jsonl", rows[:2])
    ps = D.load_math_level5(f)
    assert [(p.question, p.gold) for p in ps] == [("Q1", "x+1")]


# ----------------------------------------------------------------------------- GSM8K / GSM-Symbolic
def test_gsm8k(tmp_path):
    rows = [{"question": "q1", "answer": "step <<2*3=6>>6\n#### 6"},
            {"question": "q2", "answer": "big\n#### 1,234"},
            {"question": "q3", "answer": "neg\n#### -5"},
            {"question": "q4", "answer": "half\n#### 2.50"}]
    ps = D.load_gsm(write_jsonl(tmp_path / "gsm8k.jsonl", rows))
    assert [p.gold for p in ps] == ["6", "1234", "-5", "2.5"]
    assert ps[0].id == "gsm8k-0000" and ps[0].kind == KIND_NUMBER
    assert ps[0].meta["solution"] == "step <<2*3=6>>6"


def test_gsm_symbolic_keeps_meta(tmp_path):
    rows = [{"id": 3, "instance": 0, "question": "q", "answer": "x\n#### 12",
             "original_id": 99, "original_question": "oq", "original_answer": "oa #### 1",
             "canary": "c"},
            {"id": 3, "instance": 1, "question": "q'", "answer": "x\n#### 13",
             "original_id": 99, "original_question": "oq", "original_answer": "oa #### 1",
             "canary": "c"}]
    ps = D.load_gsm(write_jsonl(tmp_path / "GSM_symbolic.jsonl", rows))
    assert [p.id for p in ps] == ["gsm_symbolic-3-0", "gsm_symbolic-3-1"]
    assert ps[1].gold == "13" and ps[1].meta["instance"] == 1 and ps[1].meta["original_id"] == 99


@pytest.mark.parametrize("answer,needle", [("no marker 5", "no final"), ("#### five", "not a number")])
def test_gsm_malformed_answer(tmp_path, answer, needle):
    f = write_jsonl(tmp_path / "g.jsonl", [{"question": "q", "answer": "#### 1"},
                                           {"question": "q", "answer": answer}])
    with pytest.raises(DataError) as e:
        D.load_gsm(f)
    assert str(f) in str(e.value) and "line 2" in str(e.value) and "'answer'" in str(e.value)
    assert needle in str(e.value)


def test_gsm_missing_question(tmp_path):
    f = write_jsonl(tmp_path / "g.jsonl", [{"answer": "#### 1"}])
    with pytest.raises(DataError, match=r"line 1: field 'question': missing"):
        D.load_gsm(f)


# ----------------------------------------------------------------------------- MMLU-Pro
def mmlu_rows(sizes: dict[str, int]) -> list[dict]:
    rows, qid = [], 0
    for cat, k in sizes.items():
        for _ in range(k):
            rows.append({"question_id": qid, "question": f"{cat} question {qid}?",
                         "options": ["w", "x", "y", "z", "v"], "answer": "ABCDE"[qid % 5],
                         "answer_index": qid % 5, "category": cat, "src": "ori"})
            qid += 1
    return rows


def test_mmlu_pro_jsonl_json_csv_agree(tmp_path):
    rows = mmlu_rows({"law": 3, "math": 2})
    a = D.load_mmlu_pro(write_jsonl(tmp_path / "m.jsonl", rows))
    (tmp_path / "m.json").write_text(json.dumps(rows))
    b = D.load_mmlu_pro(tmp_path / "m.json")
    header = list(rows[0])
    csv_rows = [[json.dumps(r[h]) if h == "options" else str(r[h]) for h in header] for r in rows]
    csv_rows[1][header.index("options")] = str(rows[1]["options"])  # Python-literal list cell
    c = D.load_mmlu_pro(write_csv(tmp_path / "m.csv", header, csv_rows))
    for ps in (a, b, c):
        assert [(p.gold, p.choices, p.meta["category"]) for p in ps] == \
               [(r["answer"], tuple(r["options"]), r["category"]) for r in rows]
        assert all(p.kind == KIND_CHOICE for p in ps)
    assert a[0].id == "mmlu_pro-0" and "(E) v" in a[0].prompt_text()


def test_mmlu_pro_answer_index_fallback(tmp_path):
    rows = mmlu_rows({"law": 2})
    for r in rows:
        del r["answer"]
    ps = D.load_mmlu_pro(write_jsonl(tmp_path / "m.jsonl", rows))
    assert [p.gold for p in ps] == ["A", "B"]


@pytest.mark.parametrize("field,value,needle", [
    ("answer", "F", "not one of the option letters"),
    ("options", "not a list", "not a list"),
    ("options", ["only one"], "at least 2"),
    ("category", "", "empty"),
])
def test_mmlu_pro_malformed(tmp_path, field, value, needle):
    rows = mmlu_rows({"law": 3})
    rows[2][field] = value
    f = write_jsonl(tmp_path / "m.jsonl", rows)
    with pytest.raises(DataError) as e:
        D.load_mmlu_pro(f)
    msg = str(e.value)
    assert str(f) in msg and "line 3" in msg and repr(field) in msg and needle in msg


def test_mmlu_pro_json_list_item_numbering(tmp_path):
    rows = mmlu_rows({"law": 3})
    del rows[1]["question"]
    (tmp_path / "m.json").write_text(json.dumps(rows, indent=1))
    with pytest.raises(DataError, match=r"m\.json: item 2: field 'question': missing"):
        D.load_mmlu_pro(tmp_path / "m.json")


def test_mmlu_pro_stratified_counts(tmp_path):
    f = write_jsonl(tmp_path / "m.jsonl", mmlu_rows({"law": 50, "math": 30, "bio": 20}))
    ps = D.load_mmlu_pro(f, n=10, seed=0)
    assert Counter(p.meta["category"] for p in ps) == {"law": 5, "math": 3, "bio": 2}
    ids = [int(p.meta["question_id"]) for p in ps]
    assert ids == sorted(ids)  # file order
    assert [p.id for p in D.load_mmlu_pro(f, n=10, seed=0)] == [p.id for p in ps]
    assert [p.id for p in D.load_mmlu_pro(f, n=10, seed=1)] != [p.id for p in ps]


def test_mmlu_pro_stratified_minimum_one(tmp_path):
    f = write_jsonl(tmp_path / "m.jsonl", mmlu_rows({"law": 20, "math": 10, "bio": 2}))
    ps = D.load_mmlu_pro(f, n=8)
    assert Counter(p.meta["category"] for p in ps) == {"law": 5, "math": 2, "bio": 1}
    ps = D.load_mmlu_pro(f, n=2)  # fewer than categories: the largest get one
    assert Counter(p.meta["category"] for p in ps) == {"law": 1, "math": 1}
    assert len(D.load_mmlu_pro(f, n=1000)) == 32


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 15), min_size=1, max_size=6), n=st.integers(1, 60),
       seed=st.integers(0, 5))
def test_stratified_indices_property(sizes, n, seed):
    groups = [f"g{i}" for i, k in enumerate(sizes) for _ in range(k)]
    idx = D.stratified_indices(groups, n, seed)
    assert idx == sorted(set(idx)) and len(idx) == min(n, len(groups))
    got = Counter(groups[i] for i in idx)
    if len(sizes) <= n < len(groups):
        assert set(got) == set(groups)  # every group represented
        for g, k in Counter(groups).items():
            assert got[g] <= k
            assert abs(got[g] - n * k / len(groups)) < len(sizes) + 1  # close to proportional
    assert D.stratified_indices(groups, n, seed) == idx


# ----------------------------------------------------------------------------- GPQA
GPQA_HEADER = ["Record ID", "Question", "Correct Answer", "Incorrect Answer 1",
               "Incorrect Answer 2", "Incorrect Answer 3", "High-level domain", "Subdomain"]


def gpqa_rows(k: int) -> list[list[str]]:
    return [[f"rec{i}", f"Question {i}, with a comma\nand a second line?", f"right {i} ",
             f"wrong {i}a", f"wrong {i}b", f"wrong {i}c", "Physics", "Optics"] for i in range(k)]


def test_gpqa_shuffle_letters_correct_and_stable(tmp_path):
    f = write_csv(tmp_path / "gpqa_diamond.csv", GPQA_HEADER, gpqa_rows(24))
    ps = D.load_gpqa(f, seed=0)
    assert len(ps) == 24 and all(p.kind == KIND_CHOICE for p in ps)
    for i, p in enumerate(ps):
        assert p.id == f"gpqa-rec{i}"
        assert sorted(p.choices) == sorted([f"right {i}", f"wrong {i}a", f"wrong {i}b", f"wrong {i}c"])
        assert p.choices["ABCD".index(p.gold)] == f"right {i}"
        assert p.question.endswith("second line?") and p.meta["domain"] == "Physics"
    assert len({p.gold for p in ps}) >= 3  # actually shuffled
    assert [p.choices for p in D.load_gpqa(f, seed=0)] == [p.choices for p in ps]
    assert [p.choices for p in D.load_gpqa(f, seed=1)] != [p.choices for p in ps]
    # a row's order depends on its record id, not on its neighbours
    f2 = write_csv(tmp_path / "fewer.csv", GPQA_HEADER, gpqa_rows(24)[5:])
    assert [p.choices for p in D.load_gpqa(f2, seed=0)] == [p.choices for p in ps[5:]]


def test_gpqa_malformed(tmp_path):
    rows = gpqa_rows(3)
    rows[2][4] = "  "
    f = write_csv(tmp_path / "g.csv", GPQA_HEADER, rows)
    with pytest.raises(DataError) as e:
        D.load_gpqa(f)
    # header is line 1; each earlier row spans two lines (quoted newline): row 3 starts on line 6
    assert str(f) in str(e.value) and "line 6" in str(e.value)
    assert "'Incorrect Answer 2'" in str(e.value)
    f = write_csv(tmp_path / "h.csv", [h for h in GPQA_HEADER if h != "Correct Answer"],
                  [r[:2] + r[3:] for r in gpqa_rows(1)])
    with pytest.raises(DataError, match=r"line 2: field 'Correct Answer': missing"):
        D.load_gpqa(f)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataError, match="empty"):
        D.load_gpqa(tmp_path / "empty.csv")
    write_csv(tmp_path / "header_only.csv", GPQA_HEADER, [])
    with pytest.raises(DataError, match="empty"):
        D.load_gpqa(tmp_path / "header_only.csv")
    rows = gpqa_rows(1)
    rows[0][3] = rows[0][2]
    with pytest.raises(DataError, match="same text"):
        D.load_gpqa(write_csv(tmp_path / "dup.csv", GPQA_HEADER, rows))


# ----------------------------------------------------------------------------- TruthfulQA
TQA_HEADER = ["Type", "Category", "Question", "Best Answer", "Correct Answers",
              "Incorrect Answers", "Source"]


def test_truthfulqa_csv(tmp_path):
    rows = [["Adversarial", "Misconceptions", f"Q{i}?", f"best {i}", f"best {i}; also right {i}",
             f"bad {i}a; bad {i}b;bad {i}c; ", "src"] for i in range(20)]
    f = write_csv(tmp_path / "TruthfulQA.csv", TQA_HEADER, rows)
    ps = D.load_truthfulqa_mc(f, seed=0)
    for i, p in enumerate(ps):
        assert sorted(p.choices) == sorted([f"best {i}", f"bad {i}a", f"bad {i}b", f"bad {i}c"])
        assert p.choices["ABCD".index(p.gold)] == f"best {i}"
        assert p.meta["category"] == "Misconceptions"
    assert len({p.gold for p in ps}) >= 3
    assert [p.choices for p in D.load_truthfulqa_mc(f, seed=0)] == [p.choices for p in ps]
    assert [p.choices for p in D.load_truthfulqa_mc(f, seed=5)] != [p.choices for p in ps]
    rows[3][5] = " ; "
    f = write_csv(tmp_path / "bad.csv", TQA_HEADER, rows)
    with pytest.raises(DataError, match=r"bad\.csv: line 5: field 'Incorrect Answers'"):
        D.load_truthfulqa_mc(f)


def test_truthfulqa_mc_json(tmp_path):
    data = [{"question": f"Q{i}", "mc1_targets": {f"good {i}": 1, f"x{i}": 0, f"y{i}": 0, f"z{i}": 0,
                                                  f"w{i}": 0},
             "mc2_targets": {f"good {i}": 1, f"x{i}": 0}} for i in range(15)]
    f = tmp_path / "mc_task.json"
    f.write_text(json.dumps(data))
    ps = D.load_truthfulqa_mc(f)
    assert len(ps) == 15 and all(len(p.choices) == 5 for p in ps)
    assert all(p.choices["ABCDE".index(p.gold)] == f"good {i}" for i, p in enumerate(ps))
    assert len({p.gold for p in ps}) >= 3
    # hub layout: {"choices": [...], "labels": [...]}, as JSONL
    hub = [{"question": d["question"], "mc1_targets": {"choices": list(d["mc1_targets"]),
                                                       "labels": list(d["mc1_targets"].values())}}
           for d in data]
    assert [(p.gold, p.choices) for p in D.load_truthfulqa_mc(write_jsonl(tmp_path / "h.jsonl", hub))] \
        == [(p.gold, p.choices) for p in ps]


def test_truthfulqa_mc_json_malformed(tmp_path):
    data = [{"question": "Q", "mc1_targets": {"a": 1, "b": 0}},
            {"question": "Q2", "mc1_targets": {"a": 1, "b": 1}}]
    f = tmp_path / "mc.json"
    f.write_text(json.dumps(data))
    with pytest.raises(DataError) as e:
        D.load_truthfulqa_mc(f)
    assert str(f) in str(e.value) and "item 2" in str(e.value) and "'mc1_targets'" in str(e.value)
    f.write_text(json.dumps([{"question": "Q"}]))
    with pytest.raises(DataError, match="item 1: field 'mc1_targets': missing"):
        D.load_truthfulqa_mc(f)
    f.write_text("[]")
    with pytest.raises(DataError, match="empty"):
        D.load_truthfulqa_mc(f)


# ----------------------------------------------------------------------------- registry
def test_registry_names_and_errors(tmp_path):
    assert set(D.DATASETS) == {"arith", "arith_noop", "math500", "math_lv5", "gsm8k", "gsm_symbolic",
                               "mmlu_pro", "gpqa", "truthfulqa", "jsonl"}
    assert "jsonl" not in D.PAPER_SETS
    assert all(isinstance(v, str) and v for v in D.DATASETS.values())
    with pytest.raises(ConfigError) as e:
        D.load_dataset("gsm9k")
    assert "gsm9k" in str(e.value) and "math500" in str(e.value) and "truthfulqa" in str(e.value)
    for bad in (0, -3):
        with pytest.raises(ConfigError):
            D.load_dataset("arith", n=bad)
    with pytest.raises(ConfigError, match="no data path"):
        D.load_dataset("arith", path=tmp_path / "x.jsonl")


def test_registry_arith_default():
    ps = D.load_dataset()
    assert len(ps) == 50 and ps[0].id == "arith-L1-0000"
    assert [p.question for p in D.load_dataset("arith", n=7, seed=2)] == \
           [p.question for p in D.arithmetic_problems(7, seed=2)]


def test_registry_paper_set_needs_path(monkeypatch):
    monkeypatch.delenv("LASE_ALLOW_HUB", raising=False)
    with pytest.raises(ConfigError) as e:
        D.load_dataset("gpqa")
    assert "licence" in str(e.value) and "--data-path" in str(e.value) and "data_path" in str(e.value)
    monkeypatch.setenv("LASE_ALLOW_HUB", "1")
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    with pytest.raises(ConfigError, match="'datasets' package is not installed"):
        D.load_dataset("gpqa")


def test_registry_hub_path_with_fake_datasets(monkeypatch):
    """The hub branch dumps the hub split to a file and reuses the file loader."""
    calls = []

    class FakeSplit:
        def to_json(self, target):
            write_jsonl(Path(target), math500_rows())

    fake = types.ModuleType("datasets")
    fake.load_dataset = lambda repo, *a, **k: calls.append((repo, a, k)) or FakeSplit()
    monkeypatch.setitem(sys.modules, "datasets", fake)
    monkeypatch.setenv("LASE_ALLOW_HUB", "1")
    ps = D.load_dataset("math500")
    assert calls == [("HuggingFaceH4/MATH-500", (), {"split": "test"})]
    assert [p.gold for p in ps] == ["2", "3\\sqrt{2}"]


def test_registry_dispatch_every_paper_set(tmp_path):
    files = {
        "math500": write_jsonl(tmp_path / "m500.jsonl", math500_rows()),
        "math_lv5": write_math_dir(tmp_path),
        "gsm8k": write_jsonl(tmp_path / "g.jsonl", [{"question": "q", "answer": "#### 4"}]),
        "gsm_symbolic": write_jsonl(tmp_path / "gs.jsonl",
                                    [{"id": 1, "instance": 2, "question": "q", "answer": "#### 4"}]),
        "mmlu_pro": write_jsonl(tmp_path / "mp.jsonl", mmlu_rows({"law": 2})),
        "gpqa": write_csv(tmp_path / "gp.csv", GPQA_HEADER, gpqa_rows(2)),
        "truthfulqa": write_csv(tmp_path / "t.csv", TQA_HEADER,
                                [["t", "c", "Q?", "best", "best", "bad1; bad2", "s"]]),
    }
    assert set(files) == set(D.PAPER_SETS)
    for name, f in files.items():
        ps = D.load_dataset(name, path=str(f))
        assert ps, name
        assert ps[0].id.startswith({"math_lv5": "math-"}.get(name, name.split("_")[0])), (name, ps[0].id)
    assert D.load_dataset("gsm8k", path=files["gsm8k"])[0].id == "gsm8k-0000"
    assert D.load_dataset("gsm_symbolic", path=files["gsm_symbolic"])[0].id == "gsm_symbolic-1-2"


def test_registry_subset_seeded_in_file_order(tmp_path):
    rows = [{"question": f"q{i}", "answer": f"#### {i}"} for i in range(40)]
    f = write_jsonl(tmp_path / "g.jsonl", rows)
    assert len(D.load_dataset("gsm8k", path=f, n=100)) == 40  # more than available: all
    a = D.load_dataset("gsm8k", path=f, n=10, seed=0)
    assert len(a) == 10 and [int(p.gold) for p in a] == sorted(int(p.gold) for p in a)
    assert [p.id for p in D.load_dataset("gsm8k", path=f, n=10, seed=0)] == [p.id for p in a]
    assert [p.id for p in D.load_dataset("gsm8k", path=f, n=10, seed=1)] != [p.id for p in a]
    mp = write_jsonl(tmp_path / "mp.jsonl", mmlu_rows({"law": 50, "math": 30, "bio": 20}))
    got = Counter(p.meta["category"] for p in D.load_dataset("mmlu_pro", path=mp, n=10))
    assert got == {"law": 5, "math": 3, "bio": 2}


# ----------------------------------------------------------------------------- a user's own file
def test_jsonl_number_letter_and_text_answers_graded_as_the_paper_sets(tmp_path):
    from lase_nb.answers import grade

    f = write_jsonl(tmp_path / "mine.jsonl", [
        {"prompt": "What is 1,000 + 234?", "target": "1,234", "level": 2},
        {"prompt": "What is 7 / 2?", "target": 3.5},
        {"prompt": "How many?", "target": "#### 12"},
    ])
    ps = D.load_dataset("jsonl", f, fields=D.jsonl_fields("prompt", "target"))
    assert [p.id for p in ps] == ["jsonl-0000", "jsonl-0001", "jsonl-0002"]
    assert [p.gold for p in ps] == ["1234", "3.5", "12"] and {p.kind for p in ps} == {KIND_NUMBER}
    assert ps[0].meta == {"dataset": "jsonl", "row": "line 1", "level": 2} and "level" not in ps[1].meta
    assert grade("\\$1,234 dollars", ps[0].gold, ps[0].kind)  # graded as GSM8K's numbers are
    letters = write_jsonl(tmp_path / "mc.jsonl", [
        {"q": "Pick one.", "a": "b", "opts": ["red", "blue", "green"]},
        {"q": "Pick again.", "a": "C", "opts": ["x", "y", "z"]},
    ])
    mc = D.load_dataset("jsonl", letters, fields=D.jsonl_fields("q", "a", "letter", options="opts"))
    assert [(p.gold, p.kind, p.choices) for p in mc] == [("B", KIND_CHOICE, ("red", "blue", "green")),
                                                          ("C", KIND_CHOICE, ("x", "y", "z"))]
    assert "(B) blue" in mc[0].prompt_text() and grade("b", mc[0].gold, mc[0].kind)
    bare = D.load_dataset("jsonl", letters, fields=D.jsonl_fields("q", "a", "letter"))  # options in the question
    assert bare[0].choices == () and bare[0].gold == "B"
    text = write_jsonl(tmp_path / "t.jsonl", [{"question": "Simplify sqrt(18).", "answer": "3\\sqrt{2}"},
                                               {"question": "Capital of France?", "answer": "Paris"}])
    tx = D.load_dataset("jsonl", text, fields=D.jsonl_fields(kind="text"))
    assert [p.kind for p in tx] == [KIND_MATH, KIND_MATH]
    assert grade("\\sqrt{18}", tx[0].gold, tx[0].kind) and grade("paris", tx[1].gold, tx[1].kind)
    assert len(D.load_dataset("jsonl", f, n=2, seed=0, fields=D.jsonl_fields("prompt", "target"))) == 2


def test_jsonl_errors_are_one_line_naming_the_fields_the_file_has(tmp_path):
    f = write_jsonl(tmp_path / "mine.jsonl", [{"prompt": "What is 2 + 2?", "target": "4", "source": "me"}])
    with pytest.raises(DataError) as e:
        D.load_dataset("jsonl", f)
    msg = str(e.value)
    assert "\n" not in msg and "mine.jsonl: line 1: no field 'question'" in msg
    assert "'prompt', 'target', 'source'" in msg and "--question-field" in msg
    with pytest.raises(DataError, match="no field 'answer'.*--answer-field"):
        D.load_dataset("jsonl", f, fields=D.jsonl_fields("prompt"))
    with pytest.raises(DataError, match=r"line 1: field 'target': 'four' is not a number \(use --answer-kind text"):
        D.load_dataset("jsonl", write_jsonl(tmp_path / "w.jsonl", [{"prompt": "q", "target": "four"}]),
                       fields=D.jsonl_fields("prompt", "target"))
    with pytest.raises(DataError, match=r"'E' is not an option letter \(A-C\)"):
        D.load_dataset("jsonl", write_jsonl(tmp_path / "l.jsonl", [{"q": "q", "a": "E", "o": ["x", "y", "z"]}]),
                       fields=D.jsonl_fields("q", "a", "letter", options="o"))
    with pytest.raises(ConfigError, match="pass its path with --data-path"):
        D.load_dataset("jsonl")
    with pytest.raises(ConfigError, match="unknown answer kind 'words'"):
        D.jsonl_fields(kind="words")
    with pytest.raises(ConfigError, match="apply to --dataset jsonl"):
        D.load_dataset("gsm8k", f, fields={"question": "prompt"})
    with pytest.raises(DataError, match="file is empty"):
        D.load_dataset("jsonl", write_jsonl(tmp_path / "e.jsonl", []))


def test_arith_default_set_is_the_measured_level_mix():
    ps = D.arithmetic_problems(20, seed=0)
    assert {p.meta["level"] for p in ps} == set(D.DEFAULT_LEVELS)
    assert [p.id for p in ps] == [p.id for p in D.arithmetic_problems(60, seed=0, levels=(1, 2, 3))
                                  if p.meta["level"] == 1][:20]  # level-1 ids are the same in any mix
    assert all(int(x) <= 12 for p in ps for x in re.findall(r"\d+", p.question))  # small operands


# ----------------------------------------------------------------------------- train / eval splits
def test_the_splits_are_disjoint_by_template_and_numbers_whatever_the_seeds():
    key = lambda p: D.content_key(p.meta["template"], p.meta["start"], p.meta["ops"])  # noqa: E731
    train = {key(p) for s in (1, 2) for p in D.arithmetic_problems(600, seed=s, levels=(1, 2, 3), split="train")}
    held = {key(p) for s in (1, 3) for p in D.arithmetic_problems(600, seed=s, levels=(1, 2, 3), split="eval")}
    assert not train & held
    assert all(D.split_of(k) == "train" for k in train) and all(D.split_of(k) == "eval" for k in held)


def test_each_split_holds_a_few_thousand_level_1_problems_with_no_repeat():
    ps = D.arithmetic_problems(2500, seed=0, levels=(1,), split="eval")
    keys = {D.content_key(p.meta["template"], p.meta["start"], p.meta["ops"]) for p in ps}
    assert len(keys) == 2500
    for p in ps[:300]:
        assert recompute(p.meta["start"], p.meta["ops"]) == int(p.gold)
        assert p.id.startswith("arith-eval-L1-") and p.meta["split"] == "eval"


def test_no_split_is_the_original_generator():
    """The shipped recordings regenerate their problems: split=None changes nothing."""
    a = D.arithmetic_problems(30, seed=8, levels=(1, 2, 3))
    assert a[0].id == "arith-L1-0000" and "split" not in a[0].meta
    assert [p.question for p in a] == [p.question for p in D.arithmetic_problems(30, seed=8, levels=(1, 2, 3), split=None)]
    with pytest.raises(ConfigError, match="split must be one of"):
        D.arithmetic_problems(3, split="test")
    with pytest.raises(ConfigError, match="split applies to the generated 'arith' set only"):
        D.load_dataset("math500", "x.jsonl", split="eval")
