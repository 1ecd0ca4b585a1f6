"""Risky-choice framing: a sure outcome against an equal-EV gamble.

Fifteen fictional problems.  Each states how many of something are at risk,
offers a plan that saves a fixed number for certain and a plan that saves
all of them with some chance and none otherwise.  The ``wording`` type's B
describes the same two plans as losses instead of gains.
"""
from panels.scenario import Scenario

SCENARIOS = (
    Scenario(
        item_id="s01",
        title="orchard blight",
        values={"total": 600, "sure": 240, "p_pct": 40},
        c_values={"total": 600, "sure": 150, "p_pct": 40},
        letters={"A": "sure", "B": "gamble"},
        names={"valley": "place", "coop": "org"},
        context=(
            "{A fruit-growing|An orchard} cooperative {called|known as} ${coop} {tends|looks after|manages} "
            "{the old|the} apple {trees|orchards} {of|in} the ${valley} valley. {This spring|In early spring|"
            "Shortly after the blossom}, {its growers|the growers|members of the cooperative} {noticed|found|spotted} "
            "{a fungal blight|a blight caused by a fungus|a spreading fungal disease} {on the bark|in the bark} "
            "of {several|a few|a handful of} {trees|older trees} {near|close to} the {river|lower fields}.",
            "{An agronomist|A plant scientist|The regional plant-health officer} {who inspected|who walked|who surveyed} "
            "the {rows|orchards|slopes} {estimates|expects|warns} that, {if nothing is done|left untreated|"
            "without action}, {all|every one of the} ${total} {trees|apple trees} {in the valley|on the slopes} "
            "will {die|be lost|be dead} {before|by} the {next harvest|autumn|end of the season}. {The cooperative|"
            "Its board|The growers' committee} {can afford|has money for|can pay for} {only one|just one|a single} "
            "{treatment plan|programme|course of action}, and {the two|both} {candidates|options|plans on the table} "
            "{have been|were} {costed|priced} {the same|at the same amount}.",
            "{Nothing|No other factor|None of the other details} {distinguishes|separates|sets apart} the {plans|"
            "programmes} {beyond|except for|apart from} {what happens to the trees|the fate of the trees|how many "
            "trees come through}: {labour|the work}, {timing|the schedule} and {price|cost} are {identical|the same}, "
            "and {the board|the committee|the members} {have agreed|agreed|will commit} to {follow|carry out|honour} "
            "{whichever|the} {plan|option} {you|their adviser} {choose|recommend|pick}.",
        ),
        question="{As their adviser|Acting for the cooperative|Advising the board}, {which plan|which of the two "
                 "plans|which programme} {do you choose|would you pick|do you recommend}?",
        options={
            "sure": {
                "gain": "{Cut back|Prune hard and burn} the {infected|diseased} {wood|branches}: {exactly|precisely} "
                        "${sure} of the ${total} trees {will be saved|will survive|come through}, {for certain|"
                        "with certainty|no matter what}.",
                "loss": "{Cut back|Prune hard and burn} the {infected|diseased} {wood|branches}: {exactly|precisely} "
                        "${sure_lost} of the ${total} trees {will be lost|will die|are lost}, {for certain|"
                        "with certainty|no matter what}.",
            },
            "gamble": {
                "gain": "{Spray|Treat the whole valley with} an {experimental|untested} {fungicide|compound}: "
                        "{there is|with} a ${p_pct}% chance {that|} all ${total} trees {will be saved|survive} "
                        "and a ${q_pct}% chance {that|} none {will be saved|of them survive}.",
                "loss": "{Spray|Treat the whole valley with} an {experimental|untested} {fungicide|compound}: "
                        "{there is|with} a ${p_pct}% chance {that|} none of the ${total} trees {will be lost|die} "
                        "and a ${q_pct}% chance {that|} all of them {will be lost|die}.",
            },
        },
    ),
)
