"""The instrument's fixed texts: 12 fingerprint prompts and 24 subject items.

Both lists are frozen.  Each has a sha256 over its canonical JSON, and a
test pins that hash: editing one character is a new instrument, which is a
specification change, never a quiet edit.

**Runtime fingerprint prompts** (reference model).  Short, varied requests
chosen to walk different paths through the tokenizer and the model —
arithmetic, lists, a translation, code, non-ASCII text, JSON, a definition —
so that a change in any of them (a kernel, a template, a tokenizer, a file)
moves at least one generated token's top-5 log-probabilities.

**Subject fingerprint items** (the tracked commercial model).  Single-fact
questions answered yes or no.  Exactly twelve are true and twelve false, in
a fixed interleaved order: a model that says "yes" to everything scores
12/24, so a yes-habit cannot pass for knowledge (a well-known drift study
used only true items and measured a yes-bias instead of a skill).  The
answer is read by the archive's own decision grammar (version 1) with the
options ``yes`` and ``no``.
"""
from measure.canonical import canonical_sha256

FINGERPRINT_MAX_TOKENS = 24
TOP_LOGPROBS = 5

FINGERPRINT_PROMPTS: tuple[tuple[str, str], ...] = (
    ("fp01", "What is 17 plus 26? Reply with the number only."),
    ("fp02", "List the first five letters of the English alphabet, separated by commas."),
    ("fp03", "Translate the word 'thank you' into French."),
    ("fp04", "Write a Python function that returns the square of a number."),
    ("fp05", "Name three primary colours."),
    ("fp06", "Spell the word 'library' backwards."),
    ("fp07", "Write the word café in capital letters."),
    ("fp08", "Give a JSON object with the key \"city\" and the value \"Oslo\"."),
    ("fp09", "Which day comes after Tuesday?"),
    ("fp10", "In one sentence, what does a thermometer measure?"),
    ("fp11", "Complete the sequence: 2, 4, 8, 16,"),
    ("fp12", "Is ice colder than steam? Answer yes or no, then explain briefly."),
)

PROMPTS_SHA256 = canonical_sha256({"prompts": [list(p) for p in FINGERPRINT_PROMPTS],
                                   "max_tokens": FINGERPRINT_MAX_TOKENS, "top_logprobs": TOP_LOGPROBS})

SUBJECT_OPTIONS = ("yes", "no")
SUBJECT_GRAMMAR_VERSION = 1
SUBJECT_MAX_TOKENS = 64
SUBJECT_INSTRUCTION = "Answer with one final line in exactly this format: DECISION: yes or DECISION: no"

# (item_id, question, the true answer)
SUBJECT_ITEMS: tuple[tuple[str, str, str], ...] = (
    ("sf01", "Is 13 a prime number?", "yes"),
    ("sf02", "Is the Moon larger than the Earth?", "no"),
    ("sf03", "Does a triangle have three sides?", "yes"),
    ("sf04", "Is Madrid the capital of Portugal?", "no"),
    ("sf05", "Is 12 multiplied by 12 equal to 144?", "yes"),
    ("sf06", "Is 15 an even number?", "no"),
    ("sf07", "Is the Pacific the largest ocean on Earth?", "yes"),
    ("sf08", "Does a square have five corners?", "no"),
    ("sf09", "Is Au the chemical symbol for gold?", "yes"),
    ("sf10", "Is Jupiter the planet closest to the Sun?", "no"),
    ("sf11", "Do spiders have eight legs?", "yes"),
    ("sf12", "Is 3 multiplied by 4 equal to 13?", "no"),
    ("sf13", "Does water boil at a lower temperature on a high mountain than at sea level?", "yes"),
    ("sf14", "Is a metre longer than a kilometre?", "no"),
    ("sf15", "Is 2 the only even prime number?", "yes"),
    ("sf16", "Is K the chemical symbol for sodium?", "no"),
    ("sf17", "Is Canberra the capital of Australia?", "yes"),
    ("sf18", "Does February have more days than March?", "no"),
    ("sf19", "Is 1000 greater than 999?", "yes"),
    ("sf20", "Is 100 divisible by 7 with no remainder?", "no"),
    ("sf21", "Does a week have seven days?", "yes"),
    ("sf22", "Is the freezing point of pure water at sea level 10 degrees Celsius?", "no"),
    ("sf23", "Is Mount Everest higher above sea level than Mont Blanc?", "yes"),
    ("sf24", "Do penguins live in the wild at the North Pole?", "no"),
)

SUBJECT_ITEMS_SHA256 = canonical_sha256({"items": [list(i) for i in SUBJECT_ITEMS],
                                         "instruction": SUBJECT_INSTRUCTION, "options": list(SUBJECT_OPTIONS),
                                         "grammar_version": SUBJECT_GRAMMAR_VERSION,
                                         "max_tokens": SUBJECT_MAX_TOKENS})


def subject_prompt(question: str) -> str:
    """The full user message for one subject item."""
    return f"{question}\n\n{SUBJECT_INSTRUCTION}"
