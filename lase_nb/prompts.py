"""Every instruction the models see, in one place (our own wording of the LASE paper's roles; see chapter 03).

Four roles share one model: the leader (the only one allowed to write ``\\boxed{}``), the
devil's advocate, the collaborator and the senior expert. LASE with a supporter group
(``lase-ensemble``) adds the verdict line of its vote, the reading round and the moderator's
synthesis. Baselines (majority vote, debate, mixture-of-agents, DOWN) reuse the solver prompt so that every strategy starts from the same
single-agent behaviour. Small models need worked examples to box their answers, so by default the solver sees two
short worked examples as earlier chat turns, chosen by problem kind; ``examples=0`` gives the
papers' zero-shot prompts (the command line's default for API backends).
"""

from __future__ import annotations

from .types import KIND_CHOICE, KIND_MATH, Message, Problem

SOLVER_SYSTEM = (
    "You are a careful problem solver. Think through the problem step by step, "
    "then write the final answer alone inside \\boxed{}."
)

#: Worked examples shown before the real problem, as (user, assistant) turns, by problem kind.
WORKED_EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "number": [  # an addition and a subtraction whose answers (275, 404) no default problem has:
        # a small model that copies an example's answer is then graded wrong, not right by luck
        ("A farmer has 230 eggs and collects 45 more. How many eggs does he have now?",
         "The farmer starts with 230 eggs and collects 45 more, so 230 + 45 = 275 eggs.\n\\boxed{275}"),
        ("A library had 512 books and lent out 108 of them. How many books are still in the library?",
         "The library starts with 512 books and lends out 108, so 512 - 108 = 404 books are left.\n\\boxed{404}"),
    ],
    KIND_MATH: [
        ("Simplify the fraction 6/8.",
         "Both 6 and 8 are divisible by 2, so 6/8 = 3/4.\n\\boxed{\\frac{3}{4}}"),
        ("What is the positive solution of x^2 = 169?",
         "The solutions of x^2 = 169 are 13 and -13; the positive one is 13.\n\\boxed{13}"),
    ],
    KIND_CHOICE: [
        ("Which number is even?\n\n(A) 3\n(B) 8\n(C) 11\n(D) 15",
         "An even number is divisible by 2. Only 8 is, which is option B.\n\\boxed{B}"),
        ("Water freezes at what temperature in degrees Celsius?\n\n(A) 100\n(B) 50\n(C) 0",
         "At normal pressure water freezes at 0 degrees Celsius, option C.\n\\boxed{C}"),
    ],
}

#: What each supporter is for, in the order LASE calls them (our wording of the paper's intents).
SUPPORTER_ROLE: dict[str, str] = {
    "devil": (
        "You are a devil's advocate. Your job is to attack someone else's solution, not to approve "
        "it. Find its weakest step and say why it might fail; name any hidden assumption and any "
        "case it ignores; ask for a justification of every step whose reason is not written "
        "down. Recompute each calculation yourself. Never just say the solution looks correct, "
        "and never invent a mistake that is not there: if a step survives your check, say what "
        "you checked and move on to the next risk."
    ),
    "collaborator": (
        "You are a collaborator. Help the solver get this problem right: suggest a hint, a "
        "check, or a better way to organise the work. Hints only: you do not solve it for them."
    ),
    "expert": (
        "You are a senior expert. Name the key idea the attempt is missing or misusing and "
        "explain why its reasoning may be flawed, as a teacher would. Explain; do not solve."
    ),
}
#: The part of every supporter instruction that keeps the answer with the leader.
SUPPORTER_RULES = ("Do not state the final answer and never write \\boxed{}; only the solver "
                   "may give the answer.")
SUPPORTERS: tuple[str, ...] = ("devil", "collaborator", "expert")
#: Roles whose call carries the strategy's answer (the LASE leader; a lone solver).
ANSWERER_ROLES: tuple[str, ...] = ("leader", "solver")
SUPPORTER_TITLES = {"devil": "Critique", "collaborator": "Hints", "expert": "Expert note"}
SUPPORTER_TASKS = {"devil": "Write your critique.", "collaborator": "Write your hints.",
                   "expert": "Write your expert note."}


def supporter_system(role: str, critique: bool = False, hints: bool = False) -> str:
    """A supporter's instruction, describing exactly the inputs this call shows it.

    In the paper's order the collaborator also sees the devil's critique and the expert sees
    the critique and the hints; with a shuffled order a supporter may see fewer notes, and its
    instruction says so instead of promising inputs it does not get.
    """
    seen = ["the problem", "the solver's current attempt"]
    if critique:
        seen.append("a critique of it")
    if hints:
        seen.append("hints from a collaborator")
    listing = ", ".join(seen[:-1]) + " and " + seen[-1]
    return f"{SUPPORTER_ROLE[role]} You are shown {listing}. {SUPPORTER_RULES}"


#: LASE with a supporter group (the paper's Appendix I; ``lase-ensemble``): each supporter of the
#: vote ends its note with one of two verdict lines ("step N fails" or "every step holds").
VERDICT_REQUEST = ("End your note with one line giving your verdict on the attempt, exactly one of "
                   "'Verdict: step N fails' (N the number of the first step that does not hold) or "
                   "'Verdict: every step holds'.")
#: The note the leader reads when no supporter of the vote gave a verdict (a tie at zero goes to "holds").
VERDICT_HOLDS = "Verdict: every step holds"
#: A reading round of the group: a supporter reads the others' notes and writes its own again.
GROUP_REQUEST = ("Other reviewers wrote these notes on the same attempt:\n\n{notes}\n\n"
                 "Check their points against the attempt yourself: keep what you can confirm, drop what "
                 "you cannot, and write your note again.")
#: The role of the synthesis call that turns the group's notes into the one note the leader reads.
MODERATOR = "moderator"
MODERATOR_SYSTEM = (
    "You are a moderator. Several reviewers wrote notes on the same attempt at a problem. Write one "
    "note for the solver from them: keep the points the reviewers share or that you can confirm in the "
    "attempt, drop claims that do not hold, and name the first step that fails if the notes show one. "
    + SUPPORTER_RULES)
#: Every role whose call writes a note for the leader (the supporters and the group's moderator).
NOTE_ROLES: tuple[str, ...] = (*SUPPORTERS, MODERATOR)


#: Back-compatible view: each supporter's instruction as it reads in the paper's order.
SUPPORTER_SYSTEM: dict[str, str] = {
    "devil": supporter_system("devil"),
    "collaborator": supporter_system("collaborator", critique=True),
    "expert": supporter_system("expert", critique=True, hints=True),
}

#: The answer-extraction step: asked only when a leader's response has no extractable answer.
EXTRACT_REQUEST = "Your reply ended without a final answer. Write only the final answer inside \\boxed{}."
#: Where a backend that can prefill (the local model) starts the extraction reply.
EXTRACT_PREFIX = "Final answer: \\boxed{"

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
    "(the average probability its model gave to the tokens of its response):\n\n{peers}\n\n"
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


#: Worked examples per prompt by default (the embedded model needs them to box its answers; the
#: papers' agents are zero-shot, so the command line turns them off for API backends).
DEFAULT_EXAMPLES = 2


def _examples(kind: str, n: int = DEFAULT_EXAMPLES) -> list[Message]:
    turns: list[Message] = []
    for user, assistant in WORKED_EXAMPLES.get(kind, WORKED_EXAMPLES["number"])[:n]:
        turns += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return turns


def solver_messages(problem: Problem, system: str = SOLVER_SYSTEM,
                    examples: int = DEFAULT_EXAMPLES) -> list[Message]:
    """The single-agent prompt: instruction, ``examples`` worked examples (0-2), the problem."""
    return [{"role": "system", "content": system}, *_examples(problem.kind, examples),
            {"role": "user", "content": problem.prompt_text()}]


#: The revision request with the supporter's note taken out (a control of what the note adds: the
#: smallest change of :data:`REVISE_REQUEST` that drops the note and the words that point at it).
REVISE_ALONE_REQUEST = (
    "Check your work, and solve the problem again step by step. "
    "End with the final answer alone inside \\boxed{}."
)


def revise_messages(problem: Problem, attempt: str, role: str, note: str | None,
                    examples: int = DEFAULT_EXAMPLES) -> list[Message]:
    """The leader sees its own attempt and one supporter's note, and answers again; ``note=None``
    asks for the same second look with no note (:data:`REVISE_ALONE_REQUEST`)."""
    request = (REVISE_ALONE_REQUEST if note is None
               else REVISE_REQUEST.format(title=SUPPORTER_TITLES[role], note=note))
    return [*solver_messages(problem, examples=examples), {"role": "assistant", "content": attempt},
            {"role": "user", "content": request}]


def supporter_messages(problem: Problem, role: str, attempt: str,
                       critique: str | None = None, hints: str | None = None) -> list[Message]:
    """A supporter's prompt: the problem, the leader's current attempt and earlier notes."""
    parts = [f"Problem:\n{problem.prompt_text()}", f"Current attempt:\n{attempt}"]
    if critique is not None:
        parts.append(f"Critique:\n{critique}")
    if hints is not None:
        parts.append(f"Hints:\n{hints}")
    parts.append(SUPPORTER_TASKS[role])
    system = supporter_system(role, critique=critique is not None, hints=hints is not None)
    return [{"role": "system", "content": system},
            {"role": "user", "content": "\n\n".join(parts)}]


def group_messages(problem: Problem, role: str, attempt: str, critique: str | None = None,
                   hints: str | None = None, *, verdict: bool = False, own: str | None = None,
                   others: list[str] = ()) -> list[Message]:
    """A supporter of the group (``lase-ensemble``): the single supporter's prompt
    (:func:`supporter_messages`), with the verdict line asked for when ``verdict`` (the vote); in a
    reading round, its own previous note ``own`` as its reply and the ``others``' notes after it."""
    msgs = supporter_messages(problem, role, attempt, critique, hints)
    if verdict:
        msgs[0] = {"role": "system", "content": f"{msgs[0]['content']} {VERDICT_REQUEST}"}
    if own is None:
        return msgs
    listing = "\n\n".join(f"Reviewer {i + 1}:\n{n}" for i, n in enumerate(others))
    return [*msgs, {"role": "assistant", "content": own},
            {"role": "user", "content": GROUP_REQUEST.format(notes=listing)}]


def moderator_messages(problem: Problem, role: str, attempt: str, notes: list[str]) -> list[Message]:
    """The group's synthesis call: the problem, the attempt and the supporters' last notes; it
    writes the one note that goes where LASE's single ``role`` note goes."""
    listing = "\n\n".join(f"Reviewer {i + 1}:\n{n}" for i, n in enumerate(notes))
    task = f"Write the group's {SUPPORTER_TITLES[role].lower()} for the solver."
    return [{"role": "system", "content": MODERATOR_SYSTEM},
            {"role": "user", "content": f"Problem:\n{problem.prompt_text()}\n\nCurrent attempt:\n{attempt}\n\n"
                                        f"Reviewers' notes:\n\n{listing}\n\n{task}"}]


def peers_messages(problem: Problem, own: str, peers: list[str],
                   confidences: list[float | None] | None = None,
                   examples: int = DEFAULT_EXAMPLES) -> list[Message]:
    """A debater sees its previous answer and its peers' answers (with confidences for DOWN)."""
    if confidences is None:
        listing = "\n\n".join(f"Agent {i + 1}:\n{p}" for i, p in enumerate(peers))
        request = PEERS_REQUEST.format(peers=listing)
    else:
        listing = "\n\n".join(
            f"Agent {i + 1} (confidence {'unknown' if c is None else f'{c:.2f}'}):\n{p}"
            for i, (p, c) in enumerate(zip(peers, confidences)))
        request = PEERS_WITH_CONFIDENCE_REQUEST.format(peers=listing)
    return [*solver_messages(problem, examples=examples), {"role": "assistant", "content": own},
            {"role": "user", "content": request}]


def aggregate_messages(problem: Problem, candidates: list[str], system: str = AGGREGATE_SYSTEM,
                       examples: int = DEFAULT_EXAMPLES) -> list[Message]:
    """Mixture-of-Agents aggregator (and DOWN's judge): the problem plus candidate solutions."""
    listing = "\n\n".join(f"Candidate {i + 1}:\n{c}" for i, c in enumerate(candidates))
    return [{"role": "system", "content": system}, *_examples(problem.kind, examples),
            {"role": "user", "content": f"{problem.prompt_text()}\n\nCandidate solutions:\n\n{listing}"}]


#: The careful method asked for on its own (the organism's unit skill; its revisions and the devil's
#: checks write the same line inside their notes).
CAREFUL_REQUEST = "Work out {expr} by the careful method, one column at a time."


def careful_messages(expr: str) -> list[Message]:
    """The unit-skill prompt: one step (``47 + 38``) to work out by the careful method."""
    return [{"role": "user", "content": CAREFUL_REQUEST.format(expr=expr)}]


def extract_messages(messages: list[Message], response: str) -> list[Message]:
    """The answer-extraction step: the leader's call, its reply, and a request for the answer alone.

    Backends that can prefill an assistant turn (the local model) start the reply with
    :data:`EXTRACT_PREFIX` (passed as ``GenParams.prefix``); API backends see the request alone.
    """
    return [*messages, {"role": "assistant", "content": response},
            {"role": "user", "content": EXTRACT_REQUEST}]
