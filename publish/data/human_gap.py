"""``human_model_gap``: published human results a protocol can be read beside (method §1.1).

Secondary by rule: a row is shown next to the one protocol kind it is
comparable with, always with the year the human data were collected, never
averaged with anything and never used as a headline.  A family or rewording
type without a genuinely comparable multi-lab or meta-analytic result simply
has no row — nothing here is estimated, adapted or invented.

What "comparable" means: the human study asked people the same kind of
two-option question as the protocol's A and B, between subjects, and
reported (or published the counts for) the share choosing each option, so
that the difference in shares is a total-variation distance (method §6: for
two options the distance *is* the difference in shares).

Which distance: the humans' shares are shares of an option's *role* (the
sure programme), while ``gap_pct`` counts decisions by *letter*.  The
protocol prints the sure option as ``A`` on 13 of 15 risky items, so a
framing effect of one size on every scenario shows in ``gap_pct`` as 11/15 of
that size.  A row is therefore read against ``gap_role_ab_pct`` — the same
distance over the options' roles as the protocol's structure names them —
and names that field in ``read_against``; ``gap_pct`` and the curve are
unchanged.

The one row
-----------
``risky_choice_framing`` × ``wording`` — Many Labs 1 (Klein et al., 2014,
*Social Psychology* 45(3), 142–152, doi:10.1027/1864-9335/a000178), the
multi-lab replication of Tversky & Kahneman's (1981) gain/loss framing of a
disease-programme choice, 36 samples, collected in 2013.  The project's own
aggregate counts (file ``MLforR.xlsx``, sheet ``Gain_Loss``, row
``Overall:``, in the ManyLabsOpenScience/ManyLabs1 repository; data released
under CC0) are 1,974 of 3,174 choosing the sure programme in one frame and
1,038 of 3,097 in the other: 62.19% against 33.52%, a difference of
28.68 points (from the exact fractions).

Rows considered and left out, so the gaps are visible: Many Labs 1's
sunk-cost item (a rating scale, not a choice between two options) and its
anchoring items (numeric estimates, not choices); Gigerenzer & Hoffrage's
natural-frequency work (it scores the accuracy of a probability estimate,
not a choice); the ``order`` type (mechanical, no human comparison by
design) and the ``default`` type (no human comparison by method §3).
"""
from fractions import Fraction

DESIGNS = ("multi_lab", "meta_analysis")
# The measurement field a human effect may be read against: the construct the humans were measured on.
READ_AGAINST = ("gap_role_ab_pct",)

_ML1_FRAME_SURE = Fraction(1974, 3174)
_ML1_OTHER_SURE = Fraction(1038, 3097)

ROWS: tuple[dict, ...] = (
    {
        "gap_id": "ml1_gain_loss_framing",
        "family": "risky_choice_framing",
        "rewording_type": "wording",
        "study": "Many Labs 1: gain versus loss framing (replication of Tversky & Kahneman, 1981)",
        "citation": ("Klein, R. A., et al. (2014). Investigating variation in replicability: A \"Many Labs\" "
                     "replication project. Social Psychology, 45(3), 142-152. doi:10.1027/1864-9335/a000178"),
        "year": 2013,
        "design": "multi_lab",
        "n_participants": 3174 + 3097,
        "effect_pct": round(float(100 * abs(_ML1_FRAME_SURE - _ML1_OTHER_SURE)), 2),
        "effect_definition": ("Difference between the two frames in the share of people choosing the sure "
                              "programme (1,974 of 3,174 against 1,038 of 3,097), in points: the two-option "
                              "distance over the options' roles, as gap_role_ab_pct measures it (gap_pct "
                              "counts letters, and the sure option is not always A)."),
        "read_against": "gap_role_ab_pct",
        "source": ("ManyLabsOpenScience/ManyLabs1, MLforR.xlsx, sheet Gain_Loss, row 'Overall:' "
                   "(data released under CC0)"),
    },
)


def rows() -> list[dict]:
    """The rows, checked: a closed design list and an effect on the 0-100 scale."""
    out = []
    for row in ROWS:
        if row["design"] not in DESIGNS:
            raise ValueError(f"human_model_gap {row['gap_id']}: design must be one of {DESIGNS}")
        if not 0 <= row["effect_pct"] <= 100:
            raise ValueError(f"human_model_gap {row['gap_id']}: effect_pct must be on 0-100")
        if row.get("read_against") not in READ_AGAINST:
            raise ValueError(f"human_model_gap {row['gap_id']}: read_against must be one of {READ_AGAINST}")
        out.append(dict(row))
    return out


def for_protocol(header: dict) -> list[dict]:
    """The rows comparable with a protocol: same family and same rewording type."""
    return [r for r in rows()
            if r["family"] == header.get("family") and r["rewording_type"] == header.get("rewording_type")]
