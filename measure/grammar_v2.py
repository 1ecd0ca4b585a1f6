"""Decision grammar, version 2 (used by the ``v1`` protocol series only).

Version 2 differs from version 1 (:mod:`measure.grammar`) in exactly one
rule: a line counts as a decision line only if, after normalisation, it
starts with ``decision:`` **and** what follows the colon is already one of
the options.  A line such as ``DECISION: maybe`` is therefore ignored rather
than poisoning the response, so ``DECISION: maybe`` followed by
``DECISION: B`` is ``B`` here and ``unparseable`` under version 1.

Everything else — the normalisation steps, the decided rules about headings,
list markers, backticks and the colon, and the outcome when decision lines
disagree — is version 1's, imported from that frozen module rather than
copied, so the two cannot drift apart by accident.

Outcome (version 2):

* no line that qualifies → ``unparseable`` (reason ``no_decision_line``);
* qualifying lines naming different options → ``unparseable``
  (reason ``conflicting_decisions``);
* otherwise → ``valid`` with the option as the protocol spells it.
"""
from typing import Sequence

from measure.grammar import Extraction, decision_tokens, option_index

GRAMMAR_VERSION = 2


def extract(text: str, options: Sequence[str]) -> Extraction:
    """Extract the decision of one response under grammar version 2."""
    index = option_index(options)
    tokens = [token for token in decision_tokens(text) if token in index]
    if not tokens:
        return Extraction("unparseable", None, "no_decision_line", 0)
    if len(set(tokens)) > 1:
        return Extraction("unparseable", None, "conflicting_decisions", len(tokens))
    return Extraction("valid", index[tokens[0]], None, len(tokens))
