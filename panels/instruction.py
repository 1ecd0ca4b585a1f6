"""The decision instruction every version of every protocol ends with.

One instruction, byte-identical everywhere: it is the part of the prompt
that tells a model how to answer, so any difference in it between A and B
would be a second change beside the one B is allowed to make.  It is also
the only text a guard panel shares word for word with an open one, which is
why the 12-word overlap rule exempts it (:mod:`panels.leak`).

It names the options, asks for a short answer and spells out the one line
the decision grammar reads (method §5), ``DECISION: <token>``.  It does not
suggest a default letter, and it lists both options in the same order every
time.  Changing it changes every protocol's hashes.

How it was chosen.  Sixteen candidate wordings were tried on the embedded
SmolLM2-135M model (greedy, chat template, no system message) on three items
× four versions of ``risky_choice_framing__wording__v0``; most drew no
``DECISION:`` line at all (the model prefers "The answer is: A").  This one
drew as many as any other (2 of 12), and of those that did it is the
plainest for a capable model: it asks for a short answer and shows both
admissible lines, in the fixed order A, B.
On all 15 items × 4 versions (one replicate, ``max_tokens`` 256,
``python -m llmarchive.protocols.instruction_trial``) it was valid for 4/15 (A), 4/15
(A′), 3/15 (B) and 4/15 (C) responses, every valid one ``A`` — the small
model copies the first example line.  Because ``letters`` puts the sure
option, or the gamble, behind ``A`` scenario by scenario, such copying is a
letter preference, not a preference for one kind of option.  The loss
bound reports the unparseable share; the grammar is never loosened for it.
"""
from typing import Sequence

OPTIONS = ("A", "B")

INSTRUCTION = (
    "Reply with one or two sentences, then end with a final line that contains only the word DECISION, "
    "a colon and your choice, A or B, like this:\n"
    "DECISION: A\n"
    "or\n"
    "DECISION: B"
)


def instruction(options: Sequence[str] = OPTIONS) -> str:
    """The shared instruction (only the two-option form exists in v0 and v1)."""
    if tuple(options) != OPTIONS:
        raise ValueError(f"the decision instruction is written for the options {OPTIONS}, got {tuple(options)}")
    return INSTRUCTION
