"""Cumulative prospect theory with the 1992 median parameters (Tversky & Kahneman, 1992).

The simulated readers (:mod:`panels.readers`) and the families' biased
reader formulas (each family's row, :mod:`panels.families`) both value
options with these functions.  They sit in their own module so that a family
module can use them without importing :mod:`panels.readers`, which reads the
family table (the ``no-cycles`` import contract).
"""
from typing import Sequence

ALPHA = BETA = 0.88
LAMBDA = 2.25
GAMMA = 0.61
DELTA = 0.69


def value(x: float) -> float:
    """The 1992 value function: x^α for gains, −λ(−x)^β for losses."""
    return x ** ALPHA if x >= 0 else -LAMBDA * (-x) ** BETA


def weight(p: float, exponent: float) -> float:
    """The 1992 probability weighting function p^c / (p^c + (1−p)^c)^(1/c)."""
    if p <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    return p ** exponent / (p ** exponent + (1 - p) ** exponent) ** (1 / exponent)


def cpt(prospect: Sequence[tuple[float, float]]) -> float:
    """Cumulative prospect theory value of ``[(probability, outcome), …]`` (outcomes relative to the reference).

    Gains are weighted by decumulative probability from the best outcome
    down (γ), losses from the worst outcome up (δ).
    """
    total = 0.0
    gains = sorted([(p, x) for p, x in prospect if x > 0], key=lambda px: -px[1])
    losses = sorted([(p, x) for p, x in prospect if x < 0], key=lambda px: px[1])
    for outcomes, exponent in ((gains, GAMMA), (losses, DELTA)):
        cumulative = 0.0
        for p, x in outcomes:
            pi = weight(cumulative + p, exponent) - weight(cumulative, exponent)
            cumulative += p
            total += pi * value(x)
    return total
