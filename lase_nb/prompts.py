"""Every instruction the models see, in one place (our own wording of METHOD.md section 3).

Four roles share one model: the leader (the only one allowed to write ``\\boxed{}``), the
devil's advocate, the collaborator and the senior expert. Baselines (majority vote, debate,
mixture-of-agents, DOWN) reuse the solver prompt so that every strategy starts from the same
single-agent behaviour. Small models need worked examples to box their answers (DESIGN.md),
so the solver sees two short worked examples as earlier chat turns, chosen by problem kind.
"""

from __future__ import annotations

from .types import KIND_CHOICE, KIND_MATH, Message, Problem

SOLVER_SYSTEM = (
    "You are a careful problem solver. Think through the problem step by step, "
    "then write the final answer alone inside \\boxed{}."
)

#: Worked examples shown before the real problem, as (user, assistant) turns, by problem kind.
WORKED_EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "number": [
        ("A shop has 12 pens and sells 5 of them. How many pens are left?",
         "The shop starts with 12 pens and sells 5, so 12 - 5 = 7 pens are left.\n\\boxed{7}"),
        ("Each box holds 4 cakes. How many cakes are in 3 boxes?",
         "There are 3 boxes with 4 cakes each, so 3 * 4 = 12 cakes.\n\\boxed{12}"),
    ],
    KIND_MATH: [
        ("Simplify the fraction 6/8.",
         "Both 6 and 8 are divisible by 2, so 6/8 = 3/4.\n\\boxed{\\frac{3}{4}}"),
        ("What is the positive solution of x^2 = 49?",
         "The solutions of x^2 = 49 are 7 and -7; the positive one is 7.\n\\boxed{7}"),
    ],
    KIND_CHOICE: [
        ("Which number is even?\n\n(A) 3\n(B) 8\n(C) 11\n(D) 15",
         "An even number is divisible by 2. Only 8 is, which is option B.\n\\boxed{B}"),
        ("Water freezes at what temperature in degrees Celsius?\n\n(A) 100\n(B) 50\n(C) 0",
         "At normal pressure water freezes at 0 degrees Celsius, option C.\n\\boxed{C}"),
    ],
}

#: Instructions for the three supporters, in the order LASE calls them.
SUPPORTER_SYSTEM: dict[str, str] = {
    "devil": (
        "You are a devil's advocate reviewing someone else's solution. Point out its weakest "
        "step, any hidden assumption, and any case it may have missed. Only report real problems: "
        "if a step is correct, say so. Do not solve the problem yourself and do not state a final "
        "answer; never write \\boxed{}."
    ),
    "collaborator": (
        "You are a helpful collaborator. You see a problem, a current attempt and a critique of it. "
        "Suggest a hint or a better strategy that would help the solver get it right. Give hints "
        "only: do not state the final answer and never write \\boxed{}."
    ),
    "expert": (
        "You are a senior expert. You see a problem, a current attempt, a critique and hints. "
        "Name the key concept the attempt is missing and explain why its reasoning may be flawed. "
        "Do not state the final answer and never write \\boxed{}."
    ),
}
SUPPORTERS: tuple[str, ...] = ("devil", "collaborator", "expert")
SUPPORTER_TITLES = {"devil": "Critique", "collaborator": "Hints", "expert": "Expert note"}

REVISE_REQUEST = (
    "{title} from a reviewer:\n{note}\n\n"
    "Take this into account, check your work, and solve the problem again step by step. "
    "End with the final answer alone inside \\boxed{{}}."
)

PEERS_REQUEST = (
    "Here are the answers of other agents to the same problem:\n\n{peers}\n\n"
    "Use their reasoning as extra information, check your own, and give an updated solution. "
    "End with the final answer alone inside \\boxed{{}}."
)

PEERS_WITH_CONFIDENCE_REQUEST = (
    "Here are the answers of other agents to the same problem, each with the agent's confidence "
    "(the probability its model gave to its own answer):\n\n{peers}\n\n"
    "Weigh their reasoning and their confidence, check your own, and give an updated solution. "
    "End with the final answer alone inside \\boxed{{}}."
)

AGGREGATE_SYSTEM = (
    "You are given several candidate solutions to a problem from other models. Some may be wrong. "
    "Critically compare them, then write one correct solution step by step and put the final "
    "answer alone inside \\boxed{}."
)

JUDGE_SYSTEM = (
    "You are a judge. Several agents debated a problem. Read their final solutions, decide which "
    "answer is right, and write the final answer alone inside \\boxed{}."
)


def _examples(kind: str) -> list[Message]:
    turns: list[Message] = []
    for user, assistant in WORKED_EXAMPLES.get(kind, WORKED_EXAMPLES["number"]):
        turns += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return turns


def solver_messages(problem: Problem, system: str = SOLVER_SYSTEM) -> list[Message]:
    """The single-agent prompt: instruction, two worked examples, the problem."""
    return [{"role": "system", "content": system}, *_examples(problem.kind),
            {"role": "user", "content": problem.prompt_text()}]


def revise_messages(problem: Problem, attempt: str, role: str, note: str) -> list[Message]:
    """The leader sees its own attempt and one supporter's note, and answers again."""
    request = REVISE_REQUEST.format(title=SUPPORTER_TITLES[role], note=note)
    return [*solver_messages(problem), {"role": "assistant", "content": attempt},
            {"role": "user", "content": request}]


def supporter_messages(problem: Problem, role: str, attempt: str,
                       critique: str | None = None, hints: str | None = None) -> list[Message]:
    """A supporter's prompt: the problem, the leader's current attempt and earlier notes."""
    parts = [f"Problem:\n{problem.prompt_text()}", f"Current attempt:\n{attempt}"]
    if critique is not None:
        parts.append(f"Critique:\n{critique}")
    if hints is not None:
        parts.append(f"Hints:\n{hints}")
    parts.append({"devil": "Write your critique.", "collaborator": "Write your hints.",
                  "expert": "Write your expert note."}[role])
    return [{"role": "system", "content": SUPPORTER_SYSTEM[role]},
            {"role": "user", "content": "\n\n".join(parts)}]


def peers_messages(problem: Problem, own: str, peers: list[str],
                   confidences: list[float | None] | None = None) -> list[Message]:
    """A debater sees its previous answer and its peers' answers (with confidences for DOWN)."""
    if confidences is None:
        listing = "\n\n".join(f"Agent {i + 1}:\n{p}" for i, p in enumerate(peers))
        request = PEERS_REQUEST.format(peers=listing)
    else:
        listing = "\n\n".join(
            f"Agent {i + 1} (confidence {'unknown' if c is None else f'{c:.2f}'}):\n{p}"
            for i, (p, c) in enumerate(zip(peers, confidences)))
        request = PEERS_WITH_CONFIDENCE_REQUEST.format(peers=listing)
    return [*solver_messages(problem), {"role": "assistant", "content": own},
            {"role": "user", "content": request}]


def aggregate_messages(problem: Problem, candidates: list[str], system: str = AGGREGATE_SYSTEM) -> list[Message]:
    """Mixture-of-Agents aggregator (and DOWN's judge): the problem plus candidate solutions."""
    listing = "\n\n".join(f"Candidate {i + 1}:\n{c}" for i, c in enumerate(candidates))
    return [{"role": "system", "content": system}, *_examples(problem.kind),
            {"role": "user", "content": f"{problem.prompt_text()}\n\nCandidate solutions:\n\n{listing}"}]
