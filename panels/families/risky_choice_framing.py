"""Risky-choice framing: a sure outcome against an equal-EV gamble.

Fifteen fictional problems.  Each states how many of something are at risk,
offers a plan that saves a fixed number for certain and a plan that saves
all of them with some chance and none otherwise.  The ``wording`` type's B
describes the same two plans as losses instead of gains.

The ``gain`` and ``loss`` templates of one option are its one closed template
per frame.  They share their choice-group structure exactly
(:func:`check_frames`, run by the builder): rendered from the same random
stream they make the same choices, so B's loss line is A's gain line with
only the saved/lost words inside the groups changed.  Gate 1b
(:mod:`panels.conformance`) checks that word for word: it reads A's choices
off A's option line and replays them in the loss template
(:func:`option_frames`).  Where a percentage starting with an eight follows
an article, the article is written "an".
"""
from typing import Mapping, Optional

from panels.family import Family, Lotteries, Scenario, ScenarioError
from panels.prospect import cpt
from panels.template import choice_shape, parse

SCENARIOS = (
    # ------------------------------------------------------------------ s01
    Scenario(
        item_id="s01",
        title="orchard blight",
        values={"total": 600, "sure": 240, "p_pct": 40},
        c_values={"total": 600, "sure": 180, "p_pct": 40},
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
            "The cooperative's board|The growers' committee} {can afford|has money for|can pay for} {only one|just one|a single} "
            "{treatment plan|programme|course of action}, and {the two|both} {candidates|options|plans on the table} "
            "{have been|were} {costed|priced} {the same|at the same amount}.",
            "{Nothing|No other factor|None of the other details} {distinguishes|separates|sets apart} the {plans|"
            "programmes} {beyond|except for|other than} {what happens to the trees|the fate of the trees|how many "
            "trees come through}: {labour|the work}, {timing|the schedule} and {price|cost} are {identical|the same}, "
            "and {the board|the committee|the members} {have agreed to|agreed to|will} {follow|carry out|honour} "
            "{whichever|the} {plan|option} {you choose|you recommend|their adviser picks}.",
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
                "gain": "{Spray|Treat the whole valley with} {a systemic|a newly licensed} {fungicide|compound}: "
                        "{there is|this gives} a ${p_pct}% chance {that|} all ${total} trees {will be saved|survive} "
                        "and a ${q_pct}% chance {that|} none {will be saved|of them survive}.",
                "loss": "{Spray|Treat the whole valley with} {a systemic|a newly licensed} {fungicide|compound}: "
                        "{there is|this gives} a ${p_pct}% chance {that|} none of the ${total} trees {will be lost|die} "
                        "and a ${q_pct}% chance {that|} all of them {will be lost|die}.",
            },
        },
    ),
    # ------------------------------------------------------------------ s02
    Scenario(
        item_id="s02",
        title="bee colonies and mites",
        values={"total": 900, "sure": 270, "p_pct": 30},
        c_values={"total": 900, "sure": 220, "p_pct": 30},
        letters={"A": "sure", "B": "gamble"},
        names={"assoc": "org", "town": "place"},
        context=(
            "{A beekeeping|An apiary|A honey-producing} {association|cooperative} {named|called} ${assoc} "
            "{keeps|runs|looks after} ${total} {bee colonies|honeybee colonies} {spread across|scattered over|"
            "placed along} the {heath|meadows|hillsides} {around|near|outside} ${town}. {Late in the summer|"
            "At the end of summer|As the season turned}, {its members|the beekeepers|several members} "
            "{began to find|started finding|kept finding} {dead bees|heaps of dead bees|crawling, crippled bees} "
            "{in front of|outside|at the entrances of} {the hives|many hives|hive after hive}.",
            "{Lab tests|Samples sent to a laboratory|Laboratory results} {show|confirm|point to} "
            "{a mite infestation|an infestation of parasitic mites|a plague of parasitic mites} {carrying|that spreads|"
            "spreading} a {wing-deforming|crippling} virus. {The regional bee inspector|An inspector from the bee "
            "health service|The association's bee-health adviser} {expects|predicts|warns} that, {without treatment|"
            "if nothing is done|left alone}, {every colony|all of the colonies|each of the colonies} will "
            "{collapse|die out|be gone} {before|by|ahead of} {spring|the end of winter|the first spring flowers}.",
            "{There is|The association has} {time|money|enough money and time} {for only one|for just one|for a single} "
            "{approach|treatment approach|response}. {Both approaches|The two approaches|The two responses} "
            "{need|require|take} {about the same amount of work|a similar number of working days|roughly equal effort} "
            "{from the members|from the volunteers|}, and {the members|the beekeepers|the committee} {have asked|want|"
            "would like} {you|their adviser|you as adviser} to {make the call|decide|choose between them}.",
        ),
        question="{Which approach|Which of the two approaches|Which treatment} {do you choose|would you select|"
                 "do you go with} {for the colonies|for the association|}?",
        options={
            "sure": {
                "gain": "{Move|Relocate|Shift} {a share of the|some of the} {hives|colonies} to {a sheltered|an isolated|"
                        "a remote} {apiary|site} and {treat them there|treat them on their own|treat those alone}: "
                        "{exactly|precisely} ${sure} of the ${total} colonies {will be saved|will survive|pull through}, "
                        "{for certain|with certainty|without doubt}.",
                "loss": "{Move|Relocate|Shift} {a share of the|some of the} {hives|colonies} to {a sheltered|an isolated|"
                        "a remote} {apiary|site} and {treat them there|treat them on their own|treat those alone}: "
                        "{exactly|precisely} ${sure_lost} of the ${total} colonies {will be lost|will die|die out}, "
                        "{for certain|with certainty|without doubt}.",
            },
            "gamble": {
                "gain": "{Treat|Dose} {every hive|all the hives|the whole network of hives} {at once|in one go|"
                        "in a single round} {with|using} {a combined|a two-part|an alternating} {miticide|mite treatment}: "
                        "{there is|there will be} a ${p_pct}% chance {that|} all ${total} colonies {will be saved|survive} "
                        "and a ${q_pct}% chance {that|} none {will be saved|of them survive}.",
                "loss": "{Treat|Dose} {every hive|all the hives|the whole network of hives} {at once|in one go|"
                        "in a single round} {with|using} {a combined|a two-part|an alternating} {miticide|mite treatment}: "
                        "{there is|there will be} a ${p_pct}% chance {that|} none of the ${total} colonies "
                        "{will be lost|die} and a ${q_pct}% chance {that|} all of them {will be lost|die}.",
            },
        },
    ),
    # ------------------------------------------------------------------ s03
    Scenario(
        item_id="s03",
        title="flooded records office",
        values={"total": 3000, "sure": 900, "p_pct": 30},
        c_values={"total": 3000, "sure": 750, "p_pct": 30},
        letters={"A": "sure", "B": "gamble"},
        names={"town": "place", "firm": "org"},
        context=(
            "{A burst riverbank|Flash flooding|A night of flash flooding} {sent|pushed|poured} {muddy water|floodwater|"
            "brown river water} {into|through} the {basement|lower floor|cellar stores} of the ${town} {records office|"
            "municipal archive|town archive}. {By morning|When staff arrived the next day|By the time the water "
            "drained}, ${total} {boxes of|cartons of|archive boxes holding} {parish registers, maps and council minutes|"
            "old council minutes, maps and letters|land deeds, maps and minute books} {were|lay} {soaked through|"
            "wet through|sodden}.",
            "{Wet paper|Soaked paper|Damp card} {starts to|begins to|will} {grow mould|go mouldy|sprout mould} "
            "{within|in} {a few days|two or three days|days}. {The archivist in charge|The senior archivist|The head "
            "of the records office} {has been told|has been warned|knows} that, {unless something is done|if nothing "
            "is done|without a rescue}, {all|every one of the} ${total} boxes will be {ruined|beyond repair|a total "
            "loss} {by the end of the month|within weeks|before the month is out}.",
            "{A conservation firm|A document-rescue company|A specialist recovery firm}, ${firm}, {has offered|has "
            "proposed|puts forward} {two ways|two methods} {to respond|of responding|to handle it}. {The two methods cost the same and need crews of "
            "equal size|Both come with an equal fee and the same number of staff|Each carries the same price and "
            "needs a crew of the same size}, and {the council|the town council|the archive's trustees} {will fund|will pay "
            "for|can cover} {only one|just one|one of them}.",
        ),
        question="{As the archivist in charge|Speaking for the archive|If the decision were yours}, {which method|"
                 "which of the two methods|which approach} {would you choose|would you pick|would you go with}?",
        options={
            "sure": {
                "gain": "{Air-dry|Dry} the {boxes|records} {on racks|on drying racks|by hand} {in a rented hall|in a "
                        "borrowed warehouse|in a nearby gym}: {exactly|precisely} ${sure} of the ${total} boxes "
                        "{will be saved|will be rescued|can be kept}, {for certain|with certainty|for sure}.",
                "loss": "{Air-dry|Dry} the {boxes|records} {on racks|on drying racks|by hand} {in a rented hall|in a "
                        "borrowed warehouse|in a nearby gym}: {exactly|precisely} ${sure_lost} of the ${total} boxes "
                        "{will be lost|will be destroyed|will rot away}, {for certain|with certainty|for sure}.",
            },
            "gamble": {
                "gain": "{Freeze|Deep-freeze} {all the boxes|every box|the whole collection} {at once|straight away} and "
                        "{send|ship} {them|everything} to a {vacuum-drying|freeze-drying} {plant|facility}: {there is|"
                        "the firm estimates} a ${p_pct}% chance {that|} all ${total} boxes {will be saved|are rescued} "
                        "and a ${q_pct}% chance {that|} none {will be saved|are rescued}.",
                "loss": "{Freeze|Deep-freeze} {all the boxes|every box|the whole collection} {at once|straight away} and "
                        "{send|ship} {them|everything} to a {vacuum-drying|freeze-drying} {plant|facility}: {there is|"
                        "the firm estimates} a ${p_pct}% chance {that|} none of the ${total} boxes {will be lost|are "
                        "destroyed} and a ${q_pct}% chance {that|} all of them {will be lost|are destroyed}.",
            },
        },
    ),
    # ------------------------------------------------------------------ s04
    Scenario(
        item_id="s04",
        title="seed bank weevils",
        values={"total": 2400, "sure": 1680, "p_pct": 70},
        c_values={"total": 2400, "sure": 1100, "p_pct": 70},
        letters={"A": "gamble", "B": "sure"},
        names={"bank": "org", "region": "place"},
        context=(
            "${bank} is a {small|modest|community} seed bank {that stores|holding|that keeps} ${total} {samples|"
            "packets|jars} of {old crop varieties|heirloom grain and bean varieties|local grains, beans and herbs} "
            "{collected from|gathered from|donated by} farms {across|around|throughout} ${region}. {Many of|Most of|"
            "A good share of} {these varieties|the samples|them} {exist nowhere else|are held nowhere else|have no "
            "copy anywhere else}.",
            "{During|At|In} {a routine check|the yearly inspection|a spring stocktake}, {a technician|the curator|"
            "a volunteer} {found|discovered|spotted} {grain weevils|weevils|live weevils} {in|inside} {several|a few|"
            "some} {jars|containers}. {Insects like these|The pests|The weevils} {move|spread|travel} {easily|quickly} "
            "{between|among} the {shelves|racks}, {and|so} {the curator|the bank's curator|the head curator} "
            "{believes|expects|fears} that, {unless action is taken|without action|if nothing is done}, {all|every "
            "one of the} ${total} samples will be {eaten or spoiled|destroyed|ruined} {within {the season|a few "
            "months}|before the year is out}.",
            "{The bank's budget|The bank's funding|The seed bank's budget} {covers|allows|stretches to} {only one|a single|just one} "
            "{response|treatment|rescue plan}. {The two plans on offer cost the same and take equal "
            "staff time|Both candidate plans need the same money and hours of work|Each proposal costs as much and "
            "takes as long as the other}, {and|while} the {board|trustees} "
            "{will|have agreed to} {follow|act on|back} {your|the} {choice|recommendation}.",
        ),
        question="{As the person asked to decide|On the board's behalf|As the curator's adviser}, {which plan|"
                 "which of the two plans|which response} {do you choose|do you pick|would you choose}?",
        options={
            "sure": {
                "gain": "{Clean|Sieve} and {repack|reseal} {samples|jars} {by hand|one at a time} {in a quarantine "
                        "room|in a sealed room|in a clean room}: {exactly|precisely} ${sure} of the ${total} samples "
                        "{will be saved|survive|will be kept safe}, {for certain|with certainty|for sure}.",
                "loss": "{Clean|Sieve} and {repack|reseal} {samples|jars} {by hand|one at a time} {in a quarantine "
                        "room|in a sealed room|in a clean room}: {exactly|precisely} ${sure_lost} of the ${total} "
                        "samples {will be lost|are lost|will be spoiled}, {for certain|with certainty|for sure}.",
            },
            "gamble": {
                "gain": "{Run|Put} the {entire|whole} {store|collection} through a {deep-freeze|low-oxygen} "
                        "{treatment|cycle} {in one batch|all at once}: {there is|that gives} a ${p_pct}% chance {that|} "
                        "all ${total} samples {will be saved|survive} and a ${q_pct}% chance {that|} none {will be "
                        "saved|survive}.",
                "loss": "{Run|Put} the {entire|whole} {store|collection} through a {deep-freeze|low-oxygen} "
                        "{treatment|cycle} {in one batch|all at once}: {there is|that gives} a ${p_pct}% chance {that|} "
                        "none of the ${total} samples {will be lost|are lost} and a ${q_pct}% chance {that|} all of "
                        "them {will be lost|are lost}.",
            },
        },
    ),
    # ------------------------------------------------------------------ s05
    Scenario(
        item_id="s05",
        title="coral nursery heatwave",
        values={"total": 500, "sure": 300, "p_pct": 60},
        c_values={"total": 500, "sure": 200, "p_pct": 60},
        letters={"A": "sure", "B": "gamble"},
        names={"lagoon": "place", "trust": "org"},
        context=(
            "{A marine conservation trust|A reef restoration group|A small marine charity}, ${trust}, {grows|raises|"
            "tends} {young coral|coral fragments|baby corals} on {underwater frames|rope nurseries|metal tables} in "
            "the ${lagoon} lagoon. {At present|Right now|This season} {the nursery holds|the frames carry|the "
            "nursery supports} ${total} fragments {that are meant to|due to|intended to} {be planted|be transplanted} {onto|on} "
            "{a damaged reef|the bleached reef|a worn section of reef} {next year|later on|in the coming year}.",
            "{A marine heatwave|A spell of unusually warm water|A long stretch of hot, still weather} {is forecast|"
            "is on its way|has been predicted} {for|over} the {coming weeks|next month|rest of the season}. "
            "The charity's {marine biologist|lead diver|reef scientist} {expects|says|warns} that, {if the "
            "fragments stay where they are|if nothing changes|left in place}, {all|every one of the} ${total} "
            "{will bleach and die|will die|will be killed by the heat}.",
            "{The team has boat time|The divers have diving hours|The staff can spare the hours} {for only one|"
            "for just one|for one} {plan|rescue plan|course of action}. {Both plans use|The two plans use|Each plan "
            "uses} {the same|equal} {fuel, staff and money|money and crew|budget and crew}, and {the "
            "board|the group's leaders|the organisers} {will|mean to} {go with|carry out} {whichever|the} {plan|option} "
            "{you choose|you recommend|you pick}.",
        ),
        question="{Which plan|Which of these plans|Which rescue plan} {do you choose|would you choose|do you "
                 "recommend} {for the nursery|for the coral|}?",
        options={
            "sure": {
                "gain": "{Move|Shift} {part of|a share of} the {frames|nursery} {into|down to} {deeper|cooler} water "
                        "{below the warm layer|beneath the heat|out of the warm layer}: {exactly|precisely} ${sure} "
                        "of the ${total} fragments {will be saved|will survive|live}, {for certain|with certainty|"
                        "for sure}.",
                "loss": "{Move|Shift} {part of|a share of} the {frames|nursery} {into|down to} {deeper|cooler} water "
                        "{below the warm layer|beneath the heat|out of the warm layer}: {exactly|precisely} "
                        "${sure_lost} of the ${total} fragments {will be lost|will die|die}, {for certain|with "
                        "certainty|for sure}.",
            },
            "gamble": {
                "gain": "{Shade|Screen} {all the|every one of the} {frames|tables} {with|using} {shade cloth|floating "
                        "screens} and {pump|pipe} in {cooler|colder} water: {there is|this gives} a ${p_pct}% chance "
                        "{that|} all ${total} fragments {will be saved|survive} and a ${q_pct}% chance {that|} none "
                        "{will be saved|survive}.",
                "loss": "{Shade|Screen} {all the|every one of the} {frames|tables} {with|using} {shade cloth|floating "
                        "screens} and {pump|pipe} in {cooler|colder} water: {there is|this gives} a ${p_pct}% chance "
                        "{that|} none of the ${total} fragments {will be lost|die} and a ${q_pct}% chance {that|} all "
                        "of them {will be lost|die}.",
            },
        },
    ),
    # ------------------------------------------------------------------ s06
    Scenario(
        item_id="s06",
        title="failing storage array",
        values={"total": 8000, "sure": 4800, "p_pct": 60},
        c_values={"total": 8000, "sure": 3200, "p_pct": 60},
        letters={"A": "sure", "B": "gamble"},
        names={"host": "org", "town": "place"},
        context=(
            "{The hosting company|The cloud provider|The web-hosting firm} ${host} {keeps|runs|stores} ${total} "
            "{customer|client} virtual servers on {a single|one} {ageing|old} storage {array|system} in its "
            "${town} data centre. {A move|A migration} to {new|modern} hardware {was planned|had been scheduled} "
            "{for next year|for the autumn|for later in the year}, {but|yet} {last night|this week|on Monday} "
            "{several|three|a few} {disks|drives} {failed|broke down|stopped working} {in quick succession|within "
            "hours|one after another}.",
            "{The engineers on call|The on-call engineers|The storage team} {estimate|expect|believe} {that|} the "
            "{whole|entire} array {will fail|will give out|will collapse} {within|in} {days|a few days|the coming "
            "days}. {The offsite backups|Backups kept elsewhere|The backup copies}, {it turns out|they discovered|"
            "as it happens}, {stopped|had stopped|quit} {running|working} {weeks ago|a month ago}, so {if the servers "
            "stay where they are|if nothing is moved|without a move}, {all|every one of the} ${total} {servers|"
            "virtual servers} {and their data|along with their data|} will be {lost|gone|wiped out}.",
            "{There is time|There is capacity|The team has enough hands} {for only one|for just one|for a single} {rescue "
            "attempt|approach|plan}, and {both|the two} {approaches|plans|attempts} {would tie up|need|use} the "
            "{whole|entire} team {for|over} {the same|an equal} {number of hours|stretch of time}.",
        ),
        question="{As the operations manager|As head of operations|Running the response}, {which approach|"
                 "which plan|which of the two approaches} {do you choose|would you authorise|do you approve}?",
        options={
            "sure": {
                "gain": "{Move|Migrate|Transfer} {servers|the servers} {one at a time|one by one|individually} "
                        "{over|across} the {network|network link}: {exactly|precisely} ${sure} of the ${total} servers "
                        "{will be saved|will make it across|will be moved safely} {before the array fails|before the "
                        "array gives out|in time}, {for certain|with certainty|for sure}.",
                "loss": "{Move|Migrate|Transfer} {servers|the servers} {one at a time|one by one|individually} "
                        "{over|across} the {network|network link}: {exactly|precisely} ${sure_lost} of the ${total} "
                        "servers {will be lost|will go down with the array|will be left behind and lost} {when the array "
                        "fails|once the array gives out|for good}, {for certain|with certainty|for sure}.",
            },
            "gamble": {
                "gain": "{Clone|Copy} the {entire|whole} array {in one pass|in a single bulk transfer|all at once} to "
                        "{new|fresh|replacement} hardware: {there is|the team estimates} a ${p_pct}% chance {that|} all "
                        "${total} servers {will be saved|come across intact} and a ${q_pct}% chance {that|} none {will "
                        "be saved|come across intact}.",
                "loss": "{Clone|Copy} the {entire|whole} array {in one pass|in a single bulk transfer|all at once} to "
                        "{new|fresh|replacement} hardware: {there is|the team estimates} a ${p_pct}% chance {that|} "
                        "none of the ${total} servers {will be lost|are lost} and a ${q_pct}% chance {that|} all of "
                        "them {will be lost|are lost}.",
            },
        },
    ),
    # ------------------------------------------------------------------ s07
    Scenario(
        item_id="s07",
        title="young vines and frost",
        values={"total": 1500, "sure": 900, "p_pct": 60},
        c_values={"total": 1500, "sure": 600, "p_pct": 60},
        letters={"A": "sure", "B": "gamble"},
        names={"estate": "org", "hill": "place"},
        context=(
            "{The family-run|A small|A young} {wine estate|winery} {called|named} ${estate} {planted|put in|set out} ${total} "
            "{young vines|new vines|vine saplings} on {the|a} {south-facing|sunny} {slope|hillside} {above|outside} "
            "${hill} {two springs ago|the year before last}. {The vines|The young plants|The saplings} {have not yet|"
            "have still not} {produced|given|borne} {a harvest|any fruit|a crop}, {and|but} {the owners|the family|"
            "the growers} {have put most of their savings into them|had sunk nearly all of their capital into them|"
            "have invested the bulk of their money in them}.",
            "{The weather service|The regional forecast|The forecast} {predicts|calls for|warns of} a {hard|severe|deep} "
            "frost {on Thursday night|for the coming night|for tomorrow night}. {Young vines have only thin bark|"
            "Vines this young have little protective bark|Plants of this age are poorly shielded}, and {the estate's|"
            "their|the} {vineyard manager|viticulturist|grower} {is sure|says|expects} that, {unprotected|if nothing "
            "is done|left alone}, {all|every one of the} ${total} {vines|young vines} {will be killed|will die|will "
            "freeze to death}.",
            "{There is|The estate has} {equipment|time|staff} {for only one|for just one|for a single} {method|approach|"
            "plan} {before dark|before nightfall|that evening}. {The two methods cost about the same|Both methods "
            "carry a similar cost|Either method costs much the same}, and {the family|the owners} {will|have said "
            "they will} {do|go with} {whatever|whichever} {you decide|you advise|you choose}.",
        ),
        question="{Which method|Which of the two methods|Which plan} {do you choose|would you choose|do you pick} "
                 "{before dark|for the vines|}?",
        options={
            "sure": {
                "gain": "{Wrap|Bundle} the {trunks|stems} {on the lower rows|nearest the sheds|along the lane} in "
                        "{straw|frost fleece|insulating cloth}: {exactly|precisely} ${sure} of the ${total} vines "
                        "{will be saved|survive|come through}, {for certain|with certainty|for sure}.",
                "loss": "{Wrap|Bundle} the {trunks|stems} {on the lower rows|nearest the sheds|along the lane} in "
                        "{straw|frost fleece|insulating cloth}: {exactly|precisely} ${sure_lost} of the ${total} vines "
                        "{will be lost|die|are killed}, {for certain|with certainty|for sure}.",
            },
            "gamble": {
                "gain": "{Run|Operate} {sprinklers|overhead sprinklers} {across|over} the {whole|entire} {slope|hillside} "
                        "{all night|through the night} to {coat|encase} the vines in {ice|a shell of ice}: {there is|"
                        "that gives} a ${p_pct}% chance {that|} all ${total} vines {will be saved|survive} and a "
                        "${q_pct}% chance {that|} none {will be saved|survive}.",
                "loss": "{Run|Operate} {sprinklers|overhead sprinklers} {across|over} the {whole|entire} {slope|hillside} "
                        "{all night|through the night} to {coat|encase} the vines in {ice|a shell of ice}: {there is|"
                        "that gives} a ${p_pct}% chance {that|} none of the ${total} vines {will be lost|die} and a "
                        "${q_pct}% chance {that|} all of them {will be lost|die}.",
            },
        },
    ),
    # ------------------------------------------------------------------ s08
    Scenario(
        item_id="s08",
        title="mould in rare books",
        values={"total": 320, "sure": 112, "p_pct": 35},
        c_values={"total": 320, "sure": 90, "p_pct": 35},
        letters={"A": "sure", "B": "gamble"},
        names={"town": "place", "lab": "org"},
        context=(
            "{The old|The historic|The} {subscription library|town library|members' library} {in|of} ${town} {keeps|"
            "holds|owns} ${total} {rare books|early printed volumes|rare volumes}, {many of them|most of them|"
            "a good number} {centuries old|several hundred years old}, in a {basement|cellar} {strong room|vault|"
            "store}.",
            "{After|Following} {a wet winter|weeks of damp weather|a leak in a heating pipe}, the {librarian|keeper of "
            "rare books|curator} {noticed|found|saw} {a white bloom of mould|white, fuzzy mould|grey spots of "
            "fungus} {on|across} {the spines|the covers|several spines}. {A paper conservator|A book conservator|An expert "
            "in paper} {who came to look|called in to inspect|who examined the room} {says|warns|estimates} that, "
            "{if the books stay untreated|if nothing is done|left as they are}, {the mould will {destroy|ruin}|the "
            "fungus will {eat into and ruin|spoil}} {all|every one of the} ${total} volumes {by the summer|within "
            "the year|before long}.",
            "The library's {trustees|committee|board} {can pay for|have money for|can fund} {only one|just one|"
            "a single} {treatment|rescue|response}, {and|while} the {two|} {offers|quotes|proposals} {they have "
            "received|on the table|in hand} {cost|come to} {the same|the same amount|an equal sum}. {They|The library's "
            "trustees} {have asked|want|would like} {you|you, as their adviser,} to {decide|choose|make the choice}.",
        ),
        question="{Which treatment|Which of the two treatments|Which offer} {do you choose|would you choose|"
                 "do you accept}?",
        options={
            "sure": {
                "gain": "{Clean|Vacuum and clean} {volumes|the books} {by hand|one by one|page by page} {in a dry "
                        "room|in a clean room|upstairs}: {exactly|precisely} ${sure} of the ${total} books {will be "
                        "saved|can be cleaned in time|will be rescued}, {for certain|with certainty|for sure}.",
                "loss": "{Clean|Vacuum and clean} {volumes|the books} {by hand|one by one|page by page} {in a dry "
                        "room|in a clean room|upstairs}: {exactly|precisely} ${sure_lost} of the ${total} books {will "
                        "be lost|will rot|will be ruined}, {for certain|with certainty|for sure}.",
            },
            "gamble": {
                "gain": "{Send|Ship} the {whole collection|entire collection|full set of books} to a {fumigation|"
                        "low-oxygen} {chamber|room} {run by|belonging to} ${lab}: {there is|this carries} a ${p_pct}% "
                        "chance {that|} all ${total} books {will be saved|come back sound} and a ${q_pct}% chance "
                        "{that|} none {will be saved|come back sound}.",
                "loss": "{Send|Ship} the {whole collection|entire collection|full set of books} to a {fumigation|"
                        "low-oxygen} {chamber|room} {run by|belonging to} ${lab}: {there is|this carries} a ${p_pct}% "
                        "chance {that|} none of the ${total} books {will be lost|are ruined} and a ${q_pct}% chance "
                        "{that|} all of them {will be lost|are ruined}.",
            },
        },
    ),
    # ------------------------------------------------------------------ s09
    Scenario(
        item_id="s09",
        title="fish pens and algal bloom",
        values={"total": 5000, "sure": 2000, "p_pct": 40},
        c_values={"total": 5000, "sure": 1500, "p_pct": 40},
        letters={"A": "sure", "B": "gamble"},
        names={"bay": "place", "coop": "org"},
        context=(
            "{A fishing family|A small fishing cooperative|A coastal cooperative}, ${coop}, {raises|farms|keeps} "
            "{sea trout|trout} in {floating pens|net pens|sea cages} {a short way|not far} {off the shore|offshore} "
            "{near|at} ${bay}. {The pens|Its pens|The cages} {currently|now|at present} {hold|contain} ${total} "
            "{fish|trout} {close to|nearly at|almost at} {market size|selling weight|full size}.",
            "{This morning|At dawn|Early today}, {the crew|a crew member|the skipper} {saw|noticed|reported} "
            "{a rust-coloured|a brownish|a reddish} {stain|slick|patch} {spreading|drifting|moving} {across|over} "
            "the {water|bay} {towards|toward} the pens: {an algal bloom|a bloom of toxic algae|toxic algae}. "
            "{A marine scientist|The coast's fisheries officer|A biologist} {reached|contacted} {by radio|by phone} "
            "{warns|estimates|says} that, {if the fish stay|if the pens stay|left} where they are, {all|every one of "
            "the} ${total} {fish|trout} will {suffocate|die|be killed} {within|in} {a day or two|two days|hours}.",
            "{The cooperative has|The crew has|The cooperative's members have} {boats|hands|time} {for only one|for just one|for a "
            "single} {response|plan|operation}. {The two plans need about the same fuel and wages|Either plan uses "
            "roughly equal fuel and labour|Both options cost much the same to run}, {and|so} {the members|the crew} "
            "{will|have agreed to} {follow|carry out|go along with} {your|the} {call|choice|decision}.",
        ),
        question="{Which plan|Which of the two plans|Which response} {do you choose|would you pick|do you go with} "
                 "{for the pens|for the cooperative|}?",
        options={
            "sure": {
                "gain": "{Net|Scoop|Pump} {fish|trout} {out of|from} the {pens|cages} {into|to} {the boats' holding "
                        "tanks|holding tanks on the boats} {and land them|and bring them ashore|for an early harvest}: "
                        "{exactly|precisely} ${sure} of the ${total} fish {will be saved|can be saved|will be landed "
                        "in time}, {for certain|with certainty|for sure}.",
                "loss": "{Net|Scoop|Pump} {fish|trout} {out of|from} the {pens|cages} {into|to} {the boats' holding "
                        "tanks|holding tanks on the boats} {and land them|and bring them ashore|for an early harvest}: "
                        "{exactly|precisely} ${sure_lost} of the ${total} fish {will be lost|will die|will be killed "
                        "by the algae}, {for certain|with certainty|for sure}.",
            },
            "gamble": {
                "gain": "{Tow|Pull} {all the|every one of the} {pens|cages} {out to|towards} {deeper|open|clearer} "
                        "water {ahead of|before} the bloom: {there is|the crew reckons on} a ${p_pct}% chance {that|} "
                        "all ${total} fish {will be saved|survive} and a ${q_pct}% chance {that|} none {will be saved|"
                        "survive}.",
                "loss": "{Tow|Pull} {all the|every one of the} {pens|cages} {out to|towards} {deeper|open|clearer} "
                        "water {ahead of|before} the bloom: {there is|the crew reckons on} a ${p_pct}% chance {that|} "
                        "none of the ${total} fish {will be lost|die} and a ${q_pct}% chance {that|} all of them "
                        "{will be lost|die}.",
            },
        },
    ),
    # ------------------------------------------------------------------ s10
    Scenario(
        item_id="s10",
        title="timber rail bridges and wildfire",
        values={"total": 150, "sure": 90, "p_pct": 60},
        c_values={"total": 150, "sure": 60, "p_pct": 60},
        letters={"A": "sure", "B": "gamble"},
        names={"line": "place", "rail": "org"},
        context=(
            "{A narrow-gauge|A small mountain|A single-track} railway {run by|operated by|belonging to} ${rail} "
            "{winds|climbs|cuts} {through|across} {forested hills|pine forest|the forest} {above|beyond|towards} "
            "${line}. {Along its length|Over its route|On the way} it {crosses|passes over|spans} {gullies and "
            "streams|streams and ravines|creeks and ravines} on ${total} {small|short|old} timber bridges. {The "
            "line|The railway|The track} is {the only|the main} {link|connection} {to the valley|to the market town} "
            "for {the hill villages|several villages}.",
            "{A wildfire|A forest fire|A grass fire that jumped a firebreak} {has been moving|has been burning|"
            "has been spreading} {along|up} the {ridge|valley} {since yesterday|for two days|since Sunday}. "
            "{The fire service|The forest fire crews|Fire officers} {expect|predict|warn} that, {if the bridges are "
            "left as they are|unprotected|without protection}, {all|every one of the} ${total} bridges will {burn|be "
            "destroyed|burn down} {before|by the time} {the fire passes|the wind turns|rain arrives}.",
            "The railway's {track crews|maintenance gangs|workforce} {can carry out|can manage|have time for} "
            "{only one|just one|a single} {plan|defence|approach}. {The two|Both} {plans|approaches} {need|take} "
            "{all the crews|every available worker|all hands} {and|plus} {about the same|a similar amount of} "
            "{equipment|water and equipment|gear}, and {the company|the board|the line's managers} {will|have said "
            "they will} {follow|back|carry out} {your|the} {choice|recommendation|decision}.",
        ),
        question="{As the railway's engineer|Speaking as chief engineer|As the person in charge}, {which plan|"
                 "which approach|which of the two plans} {do you choose|would you choose|do you order}?",
        options={
            "sure": {
                "gain": "{Soak|Wet down} and {wrap|cover} {bridges|the bridges} {one by one|in turn} {with|in} "
                        "{fire blankets|fire-resistant foil|foil sheeting}, {working|moving} {outward|along the line} "
                        "from the depot: {exactly|precisely} ${sure} of the ${total} bridges {will be saved|can be "
                        "protected in time|survive}, {for certain|with certainty|for sure}.",
                "loss": "{Soak|Wet down} and {wrap|cover} {bridges|the bridges} {one by one|in turn} {with|in} "
                        "{fire blankets|fire-resistant foil|foil sheeting}, {working|moving} {outward|along the line} "
                        "from the depot: {exactly|precisely} ${sure_lost} of the ${total} bridges {will be lost|will "
                        "burn down|burn}, {for certain|with certainty|for sure}.",
            },
            "gamble": {
                "gain": "{Cut|Clear} a {wide|broad} {firebreak|fire line} {along|beside} the {whole|entire} {track|"
                        "route} {ahead of the fire|in the fire's path|before the fire arrives}: {there is|crews "
                        "estimate} a ${p_pct}% chance {that|} all ${total} bridges {will be saved|survive} and a "
                        "${q_pct}% chance {that|} none {will be saved|survive}.",
                "loss": "{Cut|Clear} a {wide|broad} {firebreak|fire line} {along|beside} the {whole|entire} {track|"
                        "route} {ahead of the fire|in the fire's path|before the fire arrives}: {there is|crews "
                        "estimate} a ${p_pct}% chance {that|} none of the ${total} bridges {will be lost|burn} and a "
                        "${q_pct}% chance {that|} all of them {will be lost|burn}.",
            },
        },
    ),
    # ------------------------------------------------------------------ s11
    Scenario(
        item_id="s11",
        title="livestock vaccine cold chain",
        values={"total": 9000, "sure": 2700, "p_pct": 30},
        c_values={"total": 9000, "sure": 2200, "p_pct": 30},
        letters={"A": "gamble", "B": "sure"},
        names={"vets": "org", "pass": "place"},
        context=(
            "{A district|A regional} {veterinary service|animal-health service}, ${vets}, {was carrying|was "
            "transporting|was moving} ${total} doses of {a cattle vaccine|vaccine for cattle|livestock vaccine} "
            "{to|towards} {farms|villages|herds} {in|around} ${pass}, {where|since} {a fever|a cattle fever|an "
            "outbreak of fever} {has been|was} {spreading|reported} {among herds|among the animals|this month}. "
            "{The doses must stay cold the whole way, or they spoil|The vaccine has to be kept chilled at all times, "
            "or it becomes useless|Every dose needs to stay cold throughout, or it goes off}.",
            "{Halfway up|On|Part way along} {a mountain road|the pass road|a steep road}, {the refrigerated lorry's|"
            "the lorry's} {cooling unit|chiller|cooling system} {broke down|failed|stopped working}. {The "
            "driver|The vet on board|The team on the lorry} {reports|radios|says} that {the load is warming|the boxes "
            "are getting warmer|the cargo is slowly warming}; {if nothing is done|left as it is|without action}, "
            "{all|every one of the} ${total} doses will {spoil|be unusable|be ruined} {by nightfall|within hours|"
            "before morning}.",
            "{The service|The veterinary service|The service's manager} {has|can send} {people and vehicles|staff and transport} "
            "{for only one|for just one|for a single} {rescue|plan|response}. {The two|Both} {plans|responses} "
            "{cost|would cost} {about the same|much the same}, and {the manager|the service's head|the chief vet} "
            "{has asked|wants|asks} {you|you as duty officer} to {choose|decide|pick one}.",
        ),
        question="{As the duty officer|As the officer on duty|Taking the decision}, {which plan|which response|"
                 "which of the two plans} {do you choose|would you choose|do you go for}?",
        options={
            "sure": {
                "gain": "{Send|Drive up} {a van with|an estate car with} {cool boxes|insulated cool boxes|ice boxes} "
                        "{and|to} {bring back|carry away|fetch} {what fits|as much as fits}: {exactly|precisely} "
                        "${sure} of the ${total} doses {will be saved|stay usable|are kept cold}, {for certain|with "
                        "certainty|for sure}.",
                "loss": "{Send|Drive up} {a van with|an estate car with} {cool boxes|insulated cool boxes|ice boxes} "
                        "{and|to} {bring back|carry away|fetch} {what fits|as much as fits}: {exactly|precisely} "
                        "${sure_lost} of the ${total} doses {will be lost|spoil|go to waste}, {for certain|with "
                        "certainty|for sure}.",
            },
            "gamble": {
                "gain": "{Fly in|Rush up|Send up} a {replacement|spare} {compressor|cooling part} {and|to} {repair|fix} "
                        "the {lorry's unit|chiller} {on the spot|at the roadside}: {there is|the mechanic gives it} a "
                        "${p_pct}% chance {that|} all ${total} doses {will be saved|stay usable} and a ${q_pct}% chance "
                        "{that|} none {will be saved|stay usable}.",
                "loss": "{Fly in|Rush up|Send up} a {replacement|spare} {compressor|cooling part} {and|to} {repair|fix} "
                        "the {lorry's unit|chiller} {on the spot|at the roadside}: {there is|the mechanic gives it} a "
                        "${p_pct}% chance {that|} none of the ${total} doses {will be lost|spoil} and a ${q_pct}% "
                        "chance {that|} all of them {will be lost|spoil}.",
            },
        },
    ),
    # ------------------------------------------------------------------ s12
    Scenario(
        item_id="s12",
        title="glacier station ice cores",
        values={"total": 240, "sure": 96, "p_pct": 40},
        c_values={"total": 240, "sure": 73, "p_pct": 40},
        letters={"A": "sure", "B": "gamble"},
        names={"station": "place", "institute": "org"},
        context=(
            "{A remote|A small|An isolated} research station {high on|at the edge of|on} the ${station} {glacier|"
            "ice field|ice cap} {stores|keeps|holds} ${total} {sections of|lengths of|pieces of} ice core {drilled|"
            "taken|extracted} over {three|several|four} {summers|field seasons} by {scientists from|a team from|"
            "researchers at} ${institute}. {The ice holds clues to past climate|The cores preserve a record of "
            "ancient weather|Each section holds traces of the air of past centuries}.",
            "{A fault in|A failure of|Damage to} the {station's|camp's} {generator|power plant} {has shut down|has "
            "knocked out|has stopped} the {freezer|cold store|ice store}, {and|while} {a long|an early|an unusual} "
            "{warm spell|thaw|spell of mild weather} {is forecast|is expected|has set in}. {The station leader|The "
            "camp manager|The lead glaciologist} {estimates|expects|judges} that, {if nothing is done|without "
            "action|unless something changes}, {all|every one of the} ${total} sections will {melt and be ruined|"
            "thaw and lose their record|warm up and be spoiled} {within|in} {a week|days|ten days}.",
            "{There is|The team has} {fuel|flying time|crew time} for {only one|just one|a single} {plan|rescue "
            "attempt|option}. {Both plans|The two plans} {draw on|use} {the same|an equal} {budget|sum of money} and "
            "{the same|the same number of} {people|staff}, and {the institute|the funding body|head office} {will|is "
            "ready to} {back|carry out|accept} {whatever|whichever} {you decide|you choose|the station chooses}.",
        ),
        question="{As station leader|Making the call for the team|Acting for the institute}, {which plan|which option|"
                 "which of the two plans} {do you choose|would you choose|do you take}?",
        options={
            "sure": {
                "gain": "{Pack|Load} {sections|cores} {into|onto} {snowmobile sledges|sledges} {in|with} {insulated "
                        "crates|snow-packed boxes|insulated boxes} and {haul|drag|drive} them to {the coast|the lower "
                        "camp|a cold cave}: {exactly|precisely} ${sure} of the ${total} sections {will be saved|reach "
                        "safety frozen|will survive}, {for certain|with certainty|for sure}.",
                "loss": "{Pack|Load} {sections|cores} {into|onto} {snowmobile sledges|sledges} {in|with} {insulated "
                        "crates|snow-packed boxes|insulated boxes} and {haul|drag|drive} them to {the coast|the lower "
                        "camp|a cold cave}: {exactly|precisely} ${sure_lost} of the ${total} sections {will be lost|"
                        "thaw and are ruined|will be spoiled}, {for certain|with certainty|for sure}.",
            },
            "gamble": {
                "gain": "{Wait for|Call in|Book} the {cargo plane|supply aircraft|large transport plane} to {lift|fly} "
                        "out {every section|the whole collection|all the cores} {in a single flight|on one trip|in one "
                        "load}, {if|provided} the weather {improves|clears} {in time|before the thaw}: {there is|"
                        "forecasters give} a ${p_pct}% chance {that|} all ${total} sections {will be saved|arrive "
                        "frozen} and a ${q_pct}% chance {that|} none {will be saved|arrive frozen}.",
                "loss": "{Wait for|Call in|Book} the {cargo plane|supply aircraft|large transport plane} to {lift|fly} "
                        "out {every section|the whole collection|all the cores} {in a single flight|on one trip|in one "
                        "load}, {if|provided} the weather {improves|clears} {in time|before the thaw}: {there is|"
                        "forecasters give} a ${p_pct}% chance {that|} none of the ${total} sections {will be lost|"
                        "thaw} and a ${q_pct}% chance {that|} all of them {will be lost|thaw}.",
            },
        },
    ),
    # ------------------------------------------------------------------ s13
    Scenario(
        item_id="s13",
        title="theatre costumes after a fire",
        values={"total": 700, "sure": 210, "p_pct": 30},
        c_values={"total": 700, "sure": 170, "p_pct": 30},
        letters={"A": "sure", "B": "gamble"},
        names={"town": "place", "company": "org"},
        context=(
            "{A fire|A blaze|An electrical fire} {broke out|started|began} {overnight|late at night|after a "
            "performance} in the {wardrobe store|costume store|storage wing} of the ${town} {Playhouse|Theatre|"
            "Opera House}. {Firefighters|The fire brigade|Fire crews} {put it out|brought it under control|stopped "
            "it} {before it reached|before it could spread to|before the flames reached} the stage, {but|yet} {the store's|the} "
            "${total} {costumes|historic costumes|stage costumes} {were|have been} {left|} {soaked|drenched} {with|in} "
            "{water and soot|smoke and water|sooty water}.",
            "{Some of|Many of|A number of} {the costumes|the garments|these pieces} {date back|go back} {more than|over|"
            "almost} a century, and {the company|the theatre company|the theatre's managers} {still use them|regularly bring "
            "them out|often lend them} for {revivals|period productions|touring shows}. "
            "{A textile conservator|A costume restorer|An expert in fabric care} {says|warns|estimates} that, {if "
            "nothing is done|left as they are|without treatment}, {soot and damp|the damp and the soot|mould and "
            "soot} will {ruin|destroy} {all|every one of the} ${total} {costumes|garments} {within|in} {weeks|a few "
            "weeks|a month}.",
            "The theatre's {insurance|emergency fund|insurer} {will pay for|covers|can cover} {only one|just one|"
            "a single} {rescue|method|treatment}, {and|while} {the two|both} {methods|rescues|offers} {cost|come to} "
            "{the same|an equal sum}. {The artistic director has|The theatre's board has|The trustees have} {asked "
            "you|asked you as adviser} to {choose|decide|make the decision}.",
        ),
        question="{Which method|Which rescue|Which of the two methods} {do you choose|would you choose|do you "
                 "recommend} {for the costumes|for the collection|}?",
        options={
            "sure": {
                "gain": "{Hand-wash|Clean by hand} and {air-dry|dry} {costumes|the costumes} {in|at} {the rehearsal "
                        "room|a borrowed church hall|the theatre bar}, {working with|using|with the help of} "
                        "{volunteers|the wardrobe staff}: {exactly|precisely} ${sure} of the ${total} costumes {will be "
                        "saved|can be cleaned in time|will be rescued}, {for certain|with certainty|for sure}.",
                "loss": "{Hand-wash|Clean by hand} and {air-dry|dry} {costumes|the costumes} {in|at} {the rehearsal "
                        "room|a borrowed church hall|the theatre bar}, {working with|using|with the help of} "
                        "{volunteers|the wardrobe staff}: {exactly|precisely} ${sure_lost} of the ${total} costumes "
                        "{will be lost|will be spoiled|will be ruined}, {for certain|with certainty|for sure}.",
            },
            "gamble": {
                "gain": "{Send|Ship} {all the|every one of the} costumes {in one batch|together} to ${company}, {a|an "
                        "industrial} {specialist cleaner|textile-cleaning firm}, for {an ozone and steam treatment|a "
                        "single deep-cleaning cycle|a steam and ozone process}: {there is|that carries} a ${p_pct}% "
                        "chance {that|} all ${total} costumes {will be saved|come back usable} and a ${q_pct}% chance "
                        "{that|} none {will be saved|come back usable}.",
                "loss": "{Send|Ship} {all the|every one of the} costumes {in one batch|together} to ${company}, {a|an "
                        "industrial} {specialist cleaner|textile-cleaning firm}, for {an ozone and steam treatment|a "
                        "single deep-cleaning cycle|a steam and ozone process}: {there is|that carries} a ${p_pct}% "
                        "chance {that|} none of the ${total} costumes {will be lost|are ruined} and a ${q_pct}% "
                        "chance {that|} all of them {will be lost|are ruined}.",
            },
        },
    ),
    # ------------------------------------------------------------------ s14
    Scenario(
        item_id="s14",
        title="oiled seabirds",
        values={"total": 2000, "sure": 700, "p_pct": 35},
        c_values={"total": 2000, "sure": 560, "p_pct": 35},
        letters={"A": "sure", "B": "gamble"},
        names={"island": "place", "charity": "org"},
        context=(
            "{A tanker|A cargo ship|A coastal freighter} {ran aground|struck rocks|hit a reef} {off|near} ${island} "
            "{last week|three days ago|at the weekend}, and {heavy fuel oil|thick oil|fuel oil} has {washed|drifted|"
            "spread} {into the coves|along the shoreline|onto the cliffs} where {seabirds|guillemots and puffins|auks} {nest|"
            "breed|gather}. {A wildlife charity|A bird rescue charity|A volunteer-run bird charity}, ${charity}, {counts|"
            "has counted|has found} ${total} {oiled|oil-coated} birds {on|along|across} the {ledges|rocks|beaches}.",
            "{Oiled|Oil-soaked} {birds|seabirds} {cannot|can no longer} {keep warm|stay warm|fly or feed}, {and|so} "
            "{the charity's vet|a wildlife vet|the charity's bird specialist} {expects|warns|says} that, {if nothing "
            "is done|without help|left alone}, {all|every one of the} ${total} {birds|oiled birds} will {die|be dead|"
            "perish} {within|in} {days|a few days|the week}.",
            "{The charity|The rescue group|The charity's coordinator} {has|can count on} {volunteers and boats|enough helpers "
            "and money|boats and helpers} {for only one|for just one|for a single} {plan|operation|approach}. {The two "
            "plans take about the same effort and money|Both approaches need roughly equal funds and hands|Each plan "
            "costs about the same}, and {the coordinators|the trustees|the charity's board} {will|have agreed to} "
            "{follow|back|go with} your {choice|call|decision}.",
        ),
        question="{As the rescue coordinator|Leading the rescue|On the charity's behalf}, {which plan|which approach|"
                 "which of the two plans} {do you choose|would you choose|do you go with}?",
        options={
            "sure": {
                "gain": "{Collect|Gather} {birds|oiled birds} {by hand|on foot} {from|along} the {nearest|most "
                        "reachable|easiest} {beaches|coves} and {drive|take} them to the {charity's|rescue} centre: "
                        "{exactly|precisely} ${sure} of the ${total} birds {will be saved|will be cleaned and survive|"
                        "survive}, {for certain|with certainty|for sure}.",
                "loss": "{Collect|Gather} {birds|oiled birds} {by hand|on foot} {from|along} the {nearest|most "
                        "reachable|easiest} {beaches|coves} and {drive|take} them to the {charity's|rescue} centre: "
                        "{exactly|precisely} ${sure_lost} of the ${total} birds {will be lost|will die|"
                        "die}, {for certain|with certainty|for sure}.",
            },
            "gamble": {
                "gain": "{Catch|Net} {all|every one of} the birds {at once|in a single sweep|in one operation} {with|"
                        "using} {large nets|drag nets} and {wash|clean} them {at|in} a {temporary|field} {station|"
                        "hospital} {on the beach|by the shore}: {there is|vets estimate} a ${p_pct}% chance {that|} "
                        "all ${total} birds {will be saved|survive} and a ${q_pct}% chance {that|} none {will be "
                        "saved|survive}.",
                "loss": "{Catch|Net} {all|every one of} the birds {at once|in a single sweep|in one operation} {with|"
                        "using} {large nets|drag nets} and {wash|clean} them {at|in} a {temporary|field} {station|"
                        "hospital} {on the beach|by the shore}: {there is|vets estimate} a ${p_pct}% chance {that|} "
                        "none of the ${total} birds {will be lost|die} and a ${q_pct}% chance {that|} all of them "
                        "{will be lost|die}.",
            },
        },
    ),
    # ------------------------------------------------------------------ s15
    Scenario(
        item_id="s15",
        title="ferry car park and storm surge",
        values={"total": 360, "sure": 252, "p_pct": 70},
        c_values={"total": 360, "sure": 160, "p_pct": 70},
        letters={"A": "sure", "B": "gamble"},
        names={"port": "place", "ferries": "org"},
        context=(
            "{The ferry company|The island ferry operator|The car-ferry service} ${ferries} {runs|operates} "
            "{a daily crossing|the only crossing|a regular service} to the mainland. {Its|The company's} {harbour "
            "car park|quayside car park|low-lying car park} at ${port} {is|sits} {only just|barely} above {the tide "
            "line|high water|the high-tide mark}, and {tonight|this evening|at the moment} it {holds|contains} "
            "${total} {vehicles|cars and vans} {left by|belonging to|parked by} {passengers|travellers|island "
            "residents} {who crossed earlier|now on the mainland|who took the morning boat}.",
            "{The coastguard|The harbour master|The weather service} {warns of|predicts|"
            "forecasts} a {storm surge|tidal surge} {at high tide|on the night tide|at the next high water}. {If the "
            "vehicles stay where they are|Left where they are|Unless they are moved or shielded}, {all|every one of "
            "the} ${total} {will be flooded|will be swamped by seawater|will be written off by seawater}.",
            "{The ferry company|The company|The operator} {has|can call on} {staff and equipment|people and gear} "
            "{for only one|for just one|for a single} {plan|response|course of action} {before the tide|in the hours "
            "left|before high water}. {The two|Both} {plans|responses} {cost|would cost} {much the same|about the "
            "same}, and {the manager will follow your decision|the harbour manager has agreed to act "
            "on your choice|the company's directors will accept your call}.",
        ),
        question="{As duty manager|On the company's behalf|Making the call tonight}, {which plan|which response|"
                 "which of the two plans} {do you choose|would you choose|do you order}?",
        options={
            "sure": {
                "gain": "{Tow|Lift} {vehicles|the vehicles} {one at a time|one by one} {up the hill road|to higher "
                        "ground|to the school yard on the hill} {with|using} {the port's|the harbour's} {tow trucks|"
                        "recovery lorries}: {exactly|precisely} ${sure} of the ${total} vehicles {will be saved|will "
                        "reach dry ground|can be moved in time}, {for certain|with certainty|for sure}.",
                "loss": "{Tow|Lift} {vehicles|the vehicles} {one at a time|one by one} {up the hill road|to higher "
                        "ground|to the school yard on the hill} {with|using} {the port's|the harbour's} {tow trucks|"
                        "recovery lorries}: {exactly|precisely} ${sure_lost} of the ${total} vehicles {will be lost|"
                        "will be flooded|will be swamped by the sea}, {for certain|with certainty|for sure}.",
            },
            "gamble": {
                "gain": "{Ring|Surround|Enclose} the {whole|entire} car park {with|in} a {temporary|makeshift} {flood "
                        "barrier|wall} of {sandbags and steel panels|steel panels and sandbags}: {there is|engineers "
                        "give it} a ${p_pct}% chance {that|} all ${total} vehicles {will be saved|stay dry} and a "
                        "${q_pct}% chance {that|} none {will be saved|stay dry}.",
                "loss": "{Ring|Surround|Enclose} the {whole|entire} car park {with|in} a {temporary|makeshift} {flood "
                        "barrier|wall} of {sandbags and steel panels|steel panels and sandbags}: {there is|engineers "
                        "give it} a ${p_pct}% chance {that|} none of the ${total} vehicles {will be lost|are flooded} "
                        "and a ${q_pct}% chance {that|} all of them {will be lost|are flooded}.",
            },
        },
    ),
)


FRAMES = ("gain", "loss")
# The one value the two frames quote differently: saved for certain against lost for certain.
FRAME_VALUES = {"gain": "sure", "loss": "sure_lost"}


def _value_names(template: str) -> list[str]:
    def walk(nodes: list) -> list[str]:
        out: list[str] = []
        for node in nodes:
            if isinstance(node, tuple) and node[0] == "var":
                out.append(node[1])
            elif isinstance(node, tuple) and node[0] == "choice":
                for alternative in node[1]:
                    out.extend(walk(alternative))
        return out
    return walk(parse(template))


def check_frames(scenario: Scenario) -> None:
    """Raise :class:`ScenarioError` unless each option's gain and loss templates are parallel.

    Parallel: the same choice groups in the same places (so one record of
    choices renders both, :func:`panels.template.render_choices`) and the
    same values in the same order, ``sure`` in the gain frame standing where
    ``sure_lost`` stands in the loss frame.  Only then is B's loss line
    A's gain line re-described, and nothing else.
    """
    for role in sorted(scenario.options):
        spec = scenario.options[role]
        where = f"risky_choice_framing/{scenario.item_id} option {role}"
        if not isinstance(spec, Mapping) or sorted(spec) != sorted(FRAMES):
            raise ScenarioError(f"{where}: needs exactly one template per frame, {' and '.join(FRAMES)}")
        if choice_shape(spec["gain"]) != choice_shape(spec["loss"]):
            raise ScenarioError(f"{where}: the gain and loss templates do not have the same choice groups "
                                f"in the same places")
        # Each frame's own certain number stands for "the frame's number"; the other frame's is out of place.
        names = {frame: ["(frame number)" if n == FRAME_VALUES[frame] else
                         "(the other frame's number)" if n in FRAME_VALUES.values() else n
                         for n in _value_names(spec[frame])] for frame in FRAMES}
        if names["gain"] != names["loss"] or "(the other frame's number)" in names["gain"] + names["loss"]:
            raise ScenarioError(f"{where}: the gain and loss templates do not quote the same values in the "
                                f"same order")


def option_frames(item_id: str, role: str) -> Optional[tuple[Mapping[str, str], tuple[str, ...]]]:
    """The item's templates for one option, by frame, and the item's name placeholders; None if unknown.

    Gate 1b reads these to check every word of a ``wording`` protocol's
    option lines; the name placeholders (``${coop}``, ...) are the values it
    cannot know (they are drawn per seed) and must read off A instead.
    """
    for scenario in SCENARIOS:
        if scenario.item_id == item_id:
            spec = scenario.options.get(role)
            if not isinstance(spec, Mapping) or sorted(spec) != sorted(FRAMES):
                return None
            return {frame: spec[frame] for frame in FRAMES}, tuple(sorted(scenario.names))
    return None


def derive(values: Mapping[str, int], item: str = "?") -> dict[str, int]:
    """The chance that the gamble fails and, for the loss frame, how many the sure plan loses."""
    return {"q_pct": 100 - values["p_pct"], "sure_lost": values["total"] - values["sure"]}


def lotteries(values: Mapping[str, int], derived: Mapping[str, int]) -> Lotteries:
    """The sure plan saves ``sure``; the gamble saves all ``total`` with chance ``p_pct`` %, else none."""
    return {
        "sure": [[1, 1, values["sure"]]],
        "gamble": [[values["p_pct"], 100, values["total"]], [derived["q_pct"], 100, 0]],
    }


def biased_reader(role: str, v: Mapping[str, int], shown: str) -> float:
    """Cumulative prospect theory from the reference point the frame sets (Tversky & Kahneman 1981, 1992)."""
    total, p = v["total"], v["p_pct"] / 100
    if shown == "gain":  # reference point: none saved
        prospect = [(1.0, v["sure"])] if role == "sure" else [(p, total), (1 - p, 0)]
    else:  # reference point: none lost
        prospect = [(1.0, -(total - v["sure"]))] if role == "sure" else [(p, 0), (1 - p, -total)]
    return cpt(prospect)


FAMILY = Family(
    name="risky_choice_framing",
    roles=("sure", "gamble"),
    value_keys=("total", "sure", "p_pct"),
    # A gain-frame reader's default is the sure plan, so C lowers ``sure`` and the gamble dominates.
    c_dominant_role="gamble",
    c_changed_key="sure",
    derive=derive,
    lotteries=lotteries,
    scenarios=SCENARIOS,
    open_lane=True,
    rates_paragraph=False,
    required_numbers={"gain": ("total", "sure", "p_pct", "q_pct"),
                      "loss": ("total", "sure_lost", "p_pct", "q_pct")},
    biased_reader_model="cumulative prospect theory, Tversky & Kahneman (1992): alpha = beta = 0.88, "
                        "lambda = 2.25, gamma = 0.61, delta = 0.69; reference point set by the frame",
    biased_reader=biased_reader,
    frames=FRAMES,
    check_frames=check_frames,
    wording_rule="wording_risky",
)
