"""Sunk cost: stop a half-finished project for a sure sum, or finish it on a gamble.

Fifteen fictional problems in the manner of Arkes and Blumer.  In each, an
organisation has already spent money on a project (the amount is stated in
the context of every version).  Stopping now recovers a fixed sum for
certain; finishing costs nothing more and pays a larger sum with some chance,
nothing otherwise, at exactly the same expected value.  The ``wording``
type's B adds, inside the stop option, that stopping gives up the money
already spent.
"""
from typing import Mapping

from panels.family import Family, Lotteries, Scenario
from panels.prospect import cpt, value

SCENARIOS = (
    Scenario(
        item_id="s01",
        title="half-built footbridge",
        values={"spent": 180000, "stop_value": 60000, "win": 150000, "p_pct": 40},
        c_values={"spent": 180000, "stop_value": 82000, "win": 150000, "p_pct": 40},
        letters={"A": "finish", "B": "stop"},
        names={"town": "place", "firm": "org"},
        context=(
            "{The town council of|The council in} ${town} {commissioned|ordered|paid for} a "
            "{timber|steel-and-timber|wooden} footbridge {over|across} the {river|canal|railway cutting} "
            "{to link|to connect|joining} the {old market|market square|station} {with|to} the "
            "{new housing|housing estate|school on the far side}. {So far|To date|Up to now}, "
            "{the council|it} has {spent|paid out|laid out} €${spent} on {foundations|piers|footings}, "
            "{steelwork|beams} and {design fees|engineering fees|the design}.",
            "{Last month|Recently|This spring}, {a survey|an inspection|a ground survey} {found|showed|revealed} "
            "that the {far bank|eastern bank|northern bank} is {softer|weaker|less stable} than "
            "{the designers|the engineers|anyone} {assumed|expected|had thought}. {The contractor|${firm}, the "
            "builder,|The building firm ${firm}} {can still|is able to} {finish|complete} the {bridge|crossing} "
            "{for the agreed price|at no extra charge|within its fixed-price contract}, {but|though} "
            "{a new|an independent|a second} {assessment|review|report} {doubts|questions} whether the "
            "{bridge|structure} {will pass|can pass|would pass} the {final|safety|load} {inspection|test}.",
            "{If it passes|Should it pass|If the bridge is approved}, a {regional|transport} {fund|grant scheme} "
            "{will pay|is to pay|will hand} the council a {lump sum|one-off grant}; {if it fails|should it "
            "fail|otherwise}, the {crossing|structure} {stays shut|must stay closed} and {nothing|no money} "
            "{is paid|comes in}. {Meanwhile|At the same time|In the meantime}, a {reclamation yard|salvage "
            "dealer} {has offered|is offering} to {buy|take} the {steel|beams} and {timber|decking} {as they "
            "are|today|now}.",
        ),
        question="{Acting for the council|Advising the council|On behalf of the council}, {which option do you "
                 "choose|which course would you take|which of the two do you pick}?",
        options={
            "stop": "{Stop|Halt|End} {the build|construction|the works} now[[SUNK]] and {sell|hand over} the "
                    "{steel|beams} and {timber|decking} to {that buyer|the same bidder} for "
                    "€${stop_value}, {a sure amount|paid for certain|which is guaranteed}.",
            "finish": "{Finish|Complete} the {bridge|crossing} {at no further cost|under the fixed-price contract}: "
                      "{there is|the council has} a ${p_pct}% chance {that the grant pays|of being paid|of "
                      "receiving} €${win} and a ${q_pct}% chance {of receiving nothing|of getting nothing at "
                      "all|that nothing is paid}.",
        },
    ),
    Scenario(
        item_id="s02",
        title="film in post-production",
        values={"spent": 2400000, "stop_value": 800000, "win": 3200000, "p_pct": 25},
        c_values={"spent": 2400000, "stop_value": 1200000, "win": 3200000, "p_pct": 25},
        letters={"A": "finish", "B": "stop"},
        names={"studio": "org", "city": "place"},
        context=(
            "${studio}, {a small|an independent|a modest} film {company|production company}, {has almost "
            "finished|is nearly done with|is close to finishing} a {period drama|historical drama|costume "
            "drama} {about|set among|following} {lighthouse keepers|a family of lighthouse keepers|the keepers "
            "of a remote lighthouse}. {Shooting|Filming} {is over|has wrapped|ended last winter}, and "
            "{the company|${studio}} {has spent|has already spent|has paid out} €${spent} "
            "{on|for} {cast, crew and sets|the cast, the crew and the sets|actors, crew and locations}.",
            "{The remaining|The last} {editing, music and sound work|post-production work|work in the edit "
            "suite} is {covered|paid for} by {a completion|an existing} {bond|guarantee}, so {finishing|completing "
            "the film} {costs|will cost} {the company|${studio}} nothing more. {What matters now|The open "
            "question|The question now} is {what happens|how the film fares} {after|once} it is "
            "{done|finished}: a {streaming service|distributor|broadcaster} {has said|has promised} it "
            "{will buy|would buy|will take} the {finished|completed} film {if|provided that} {it is "
            "selected|it wins a place} {at|for} the ${city} {festival|film festival}.",
            "{Alternatively|On the other hand|Instead}, a rival studio has {offered|made an "
            "offer} to {buy|acquire} the {raw footage|unedited footage|rushes} {and the rights|together with "
            "the rights} {straight away|right now|today}, {as it is|in its current state|unfinished}. "
            "{The offer|This offer} {expires|ends|lapses} {at the end of the week|on Friday|within days}.",
        ),
        question="{You run|You are in charge of|Suppose you run} ${studio}: {which option do you take|what do you "
                 "decide|which path do you choose}?",
        options={
            "stop": "{Stop|Halt|Shelve} {post-production|the edit|the film} now[[SUNK]] and {sell|hand over} the "
                    "{footage and rights|rushes and the rights} to {the|that} rival studio for "
                    "€${stop_value}, {paid for certain|a guaranteed sum|with certainty}.",
            "finish": "{Finish|Complete} the film and {submit it to|enter it for} the festival: {there is|you have} "
                      "a ${p_pct}% chance {that it is selected and sold for|of being picked and bought for|of a "
                      "selection and a sale worth} €${win}, and a ${q_pct}% chance {that it is rejected and "
                      "earns nothing|of rejection, with no sale at all|of being turned down and selling for "
                      "nothing}.",
        },
    ),
    Scenario(
        item_id="s03",
        title="restaurant refit",
        values={"spent": 46000, "stop_value": 26000, "win": 52000, "p_pct": 50},
        c_values={"spent": 46000, "stop_value": 32000, "win": 52000, "p_pct": 50},
        letters={"A": "finish", "B": "stop"},
        names={"bistro": "org", "town": "place"},
        context=(
            "{A family-run|A small|A neighbourhood} restaurant {called|named} ${bistro} in ${town} "
            "{began|started} {a refit|a renovation|refurbishing its dining room} {in the autumn|last "
            "autumn|after the summer rush}. {New|The new} {flooring|floors}, {lighting|lamps} and {a bar "
            "counter|a long bar} are {in place|installed|already fitted}, and {the owners|the family} have "
            "{spent|paid} €${spent} {so far|to date|up to now}.",
            "{The plan|Their plan|The idea} {was|had been} to {reopen|relaunch} as a {seafood|fish} "
            "{kitchen|restaurant} {aimed at|for|serving} {visitors|tourists|summer visitors}. {But|However,} a "
            "{new|large} {road scheme|bypass|ring road} {may|could|might} {divert|take} {most|much} of the "
            "{passing|summer} traffic {away from|around} the {town|high street} {next year|from next spring}, "
            "{and|though} {nobody yet knows|no one can say|nobody can tell} {whether|if} {it will go ahead|the scheme "
            "will be approved|the council will approve it}.",
            "{The kitchen supplier|A kitchen-equipment dealer|An equipment dealer} has {offered|proposed} to "
            "{take back|buy back|repurchase} the {unused|still-boxed|uninstalled} {ovens|cooking ranges} and "
            "{fittings|fixtures}. {Finishing|Completing} the refit, {on the other hand|by contrast|for its "
            "part}, {needs no more money|costs nothing more|requires no further spending}, {because|since} the "
            "{builder|fitter|contractor} {was paid|has been paid} {in advance|up front}.",
        ),
        question="{If you owned|If you ran|As the owner of} ${bistro}, {which would you choose|what would you "
                 "do|which option would you take}?",
        options={
            "stop": "{Stop|Call off|Abandon} the refit now[[SUNK]] and {sell|hand back} the {ovens|ranges} {and "
                    "fittings|and fixtures} {to the firm that supplied them|to the seller} for €${stop_value}, {received for certain|a "
                    "fixed sum|guaranteed}.",
            "finish": "{Finish|Complete} the refit and {reopen|relaunch}: {there is|you face} a ${p_pct}% chance "
                      "{that the road plan is dropped|the scheme is rejected} and the {reopening|new menu} {brings "
                      "in|earns} €${win}, and a ${q_pct}% chance {that it goes ahead|the scheme is approved} and "
                      "{the refit|the restaurant} {earns|brings in} nothing.",
        },
    ),
    Scenario(
        item_id="s04",
        title="satellite camera payload",
        values={"spent": 7500000, "stop_value": 3600000, "win": 9000000, "p_pct": 40},
        c_values={"spent": 7500000, "stop_value": 4500000, "win": 9000000, "p_pct": 40},
        letters={"A": "stop", "B": "finish"},
        names={"lab": "org", "buyer": "org"},
        context=(
            "${lab}, {a university spin-off|a small space company|an instrument maker}, {is building|has been "
            "building} a {camera|sensor} {payload|instrument} {to fly on|for} a {weather satellite|climate "
            "satellite|polar-orbiting satellite}. {The team|Its engineers} {have spent|have used up} "
            "€${spent} {over|across} {three|four} years on {design|development}, {testing|tests} and "
            "{flight hardware|parts}.",
            "{During|In} {a vibration test|the last shake test|a launch-load test}, {one|a} {mirror mount|lens "
            "mount|mirror support} {cracked|failed|came loose}. {A fix|The repair|A redesign} {has been|is} "
            "{agreed|planned} and {is covered|will be paid for} by the {existing|original} contract, but "
            "{the launch|the launch slot} {cannot|will not} {move|be delayed|wait}: {if the payload is "
            "not|should the payload not be} {qualified|ready} {in time|by then|before the deadline}, {the "
            "satellite|the spacecraft} {flies|launches|goes up} without it, and the satellite's operator pays nothing.",
            "{A defence contractor|Another firm|A telescope maker} {called|named} ${buyer} has "
            "{offered|proposed} to buy the {half-finished|unfinished} {unit|payload} {and its test data|with "
            "all the test data} {outright|today|now}. {Its offer|The bid|That offer} {is firm|stands} {for "
            "now|for a short while|until the end of the month}.",
        ),
        question="{Acting for|Speaking for|On behalf of} ${lab}, {which option do you pick|what is your "
                 "decision|which route do you take}?",
        options={
            "stop": "{Stop|End|Halt} the {programme|project|work} now[[SUNK]] and {sell|transfer} the "
                    "{unit|payload} to ${buyer} for €${stop_value}, {paid in full for certain|a certain "
                    "sum|guaranteed}.",
            "finish": "{Finish|Complete} the {repair|fix} and {aim for|go for|try for} the launch: {there is|the "
                      "team has} a ${p_pct}% chance {the payload|the instrument} {qualifies|is ready} {in "
                      "time|by the deadline} and the operator pays €${win}, and a ${q_pct}% chance "
                      "{it misses|it is not ready} and {nothing is paid|the payment is zero}.",
        },
    ),
    Scenario(
        item_id="s05",
        title="board game print run",
        values={"spent": 28000, "stop_value": 15000, "win": 60000, "p_pct": 25},
        c_values={"spent": 28000, "stop_value": 18000, "win": 60000, "p_pct": 25},
        letters={"A": "finish", "B": "stop"},
        names={"pub": "org", "city": "place"},
        context=(
            "{A two-person|A tiny|A small} {games publisher|board-game company} {called|named} ${pub} "
            "{ordered|commissioned|booked} a {first|debut} print run of {its|a} {strategy game|card-and-board "
            "game|board game} {about|set in|built around} {river trade|canal barges|trading on a river}. "
            "{So far|To date|By now}, ${pub} has {spent|laid out} €${spent} {on|for} {artwork|illustration}, "
            "{moulds|tooling} and {a deposit to the printer|the printer's deposit|half the printing}.",
            "{The rest of the|The remaining} {printing bill|printing cost} is {already|} {covered|paid} by "
            "{pre-orders|advance orders|backers' pledges}, so {finishing|completing the run} {costs|will cost} "
            "{nothing more|no extra money}. Whether the game {makes money|earns anything|turns a profit}, "
            "{though|however}, {depends on|rests on|hinges on} {a single|one big} {order|deal}: {a chain of game "
            "shops|a large retail chain|a national toy retailer} {will decide|decides} {after|at} the ${city} "
            "{games fair|trade fair} whether to {stock|carry|take} it.",
            "{Meanwhile|At the same time|In the meantime}, the printer has {offered|proposed} to {cancel|stop} "
            "the {job|run} and {buy|take over} the {finished|completed} {artwork|art files} and "
            "{moulds|tooling} {for another client|for its own range|to reuse elsewhere}.",
        ),
        question="{In|If you were in} the publisher's {place|position|shoes}, {which would you choose|which "
                 "option would you go for|what would you do}?",
        options={
            "stop": "{Cancel|Stop|Halt} the print run now[[SUNK]] and {sell|hand over} the {artwork and "
                    "moulds|art files and tooling} to the printer for €${stop_value}, {a sure payment|paid for "
                    "certain|a fixed amount}.",
            "finish": "{Finish|Complete} the {run|printing} and {show|present} the game at the fair: {there "
                      "is|this gives} a ${p_pct}% chance {that the chain orders it|of a chain order}, {bringing "
                      "in|worth} €${win}, and a ${q_pct}% chance {that it declines and the run earns nothing|of a "
                      "refusal, leaving the run earning nothing|that no order comes and nothing is earned}.",
        },
    ),
    Scenario(
        item_id="s06",
        title="booking software rewrite",
        values={"spent": 640000, "stop_value": 160000, "win": 400000, "p_pct": 40},
        c_values={"spent": 640000, "stop_value": 230000, "win": 400000, "p_pct": 40},
        letters={"A": "finish", "B": "stop"},
        names={"firm": "org", "client": "org"},
        context=(
            "${firm}, {a logistics software house|a maker of shipping software|a software company}, "
            "{began|started} {rewriting|rebuilding} its {old|ageing} {booking|scheduling} system {from "
            "scratch|in a new language|on a modern platform} {eighteen months ago|a year and a half ago|two "
            "years ago}. {The rewrite|The project} has {cost|taken} €${spent} {so far|to date}, "
            "{mostly|largely} in {salaries|developer salaries|staff time}.",
            "{A single|One} {large|major} {client|customer}, ${client}, {has agreed|has promised} to "
            "{buy|license} the new system {if|provided} it {passes|clears} {the client's|its} {acceptance "
            "tests|trial} {by the end of the year|before the year is out}. {The remaining work|The last stretch "
            "of work} {will be done|is being done} by {staff already|developers already} {paid for|under "
            "contract}, so {finishing|completing it} {adds no cost|costs nothing extra}.",
            "{Another|A rival|A competing} {software firm|vendor} has {offered|proposed} to {buy|acquire} the "
            "{unfinished|half-done|partial} {code|codebase} {and the team's designs|together with the "
            "designs} {now|straight away}, {to build|to fold} into {its own|a} {product|platform}.",
        ),
        question="{Taking|Making} the {decision|call} for ${firm}, {which option do you choose|which way do you "
                 "go|which do you pick}?",
        options={
            "stop": "{Stop|Drop|Halt} the rewrite now[[SUNK]] and {sell|license} the {unfinished|partial} code to "
                    "the {rival|other} {firm|vendor} for €${stop_value}, {paid for certain|a guaranteed sum|a "
                    "sure amount}.",
            "finish": "{Finish|Complete} the rewrite {and|and then} {put it to|submit it for} ${client}'s "
                      "{tests|trial}: {there is|you have} a ${p_pct}% chance {it passes|that it is accepted} and "
                      "{earns|brings in} €${win}, and a ${q_pct}% chance {it fails|that it is rejected} and "
                      "{earns|brings in} nothing.",
        },
    ),
    Scenario(
        item_id="s07",
        title="ocean racing yacht",
        values={"spent": 1150000, "stop_value": 500000, "win": 2500000, "p_pct": 20},
        c_values={"spent": 1150000, "stop_value": 620000, "win": 2500000, "p_pct": 20},
        letters={"A": "finish", "B": "stop"},
        names={"port": "place"},
        context=(
            "{A sailing syndicate|A racing syndicate|A yacht-club syndicate} {from|based in} ${port} is "
            "{building|commissioning} a {carbon-fibre|lightweight} {racing yacht|ocean racer} {for|to enter} "
            "{a round-the-world race|an ocean race|a long-distance race}. {The hull|Its hull} and "
            "{mast|rigging} are {done|finished|complete}, and the syndicate has {spent|paid} €${spent} "
            "{so far|up to now|on the boat}. {The crew|A full crew} {has been|is already} {chosen|picked|signed up}, and "
            "the {race|start} is {next spring|early next year|some months away}.",
            "{The boatyard|The builder} {will finish|has agreed to finish} the {fit-out|interior and "
            "electronics|deck and electronics} {at no further charge|within the agreed price|without extra "
            "cost}. {Prize money|The prize} and {sponsorship|a sponsor's bonus} {would|will} {come in|be "
            "paid} {if the yacht finishes|should the yacht finish} {on the podium|in the top three|among the "
            "leaders}; {otherwise|if not}, the {race|campaign} {earns|brings} the syndicate nothing.",
            "{A wealthy|A private|A rival} {boat dealer|racing team|buyer} has {offered|proposed} to "
            "{buy|purchase} the {unfinished|bare} {hull and mast|hull and rig} {as they are|in their current "
            "state|today}, {for a different race|for cruising|for another campaign}.",
        ),
        question="{If you led|If you were leading|As the head of} the syndicate, {which option would you "
                 "take|what would you decide|which would you choose}?",
        options={
            "stop": "{Stop|Halt|End} the {build|project} now[[SUNK]] and {sell|hand over} the hull and "
                    "{mast|rig} {to the buyer|to that bidder} for €${stop_value}, {paid for certain|a "
                    "guaranteed sum|a certain amount}.",
            "finish": "{Finish|Complete} the yacht and {race it|enter the race}: {there is|the syndicate has} a "
                      "${p_pct}% chance {of a podium finish worth|that a podium finish brings|of a top-three "
                      "place bringing} €${win}, and an ${q_pct}% chance {of missing the podium and getting "
                      "nothing|that it misses out and earns nothing|of no prize and no bonus}.",
        },
    ),
    Scenario(
        item_id="s08",
        title="museum textile wing",
        values={"spent": 3600000, "stop_value": 800000, "win": 2000000, "p_pct": 40},
        c_values={"spent": 3600000, "stop_value": 1200000, "win": 2000000, "p_pct": 40},
        letters={"A": "finish", "B": "stop"},
        names={"city": "place", "dev": "org"},
        context=(
            "The {museum|city museum|textile museum} {of|in} ${city} {is adding|has been adding|started "
            "adding} a {new|glass-fronted|modern} wing {to display|to house|for} its {textile "
            "collection|historic tapestries|collection of rugs and tapestries}. {Its trustees|The "
            "trustees|The board} have {spent|already spent|paid out} €${spent} on the {shell|structure|outer "
            "building}, {which now stands complete but empty|and it is finished but unfitted|which is built "
            "but still bare}. {Work began|Building started|Construction began} {two years ago|three years "
            "ago|the year before last}.",
            "{A private|A cultural|An arts} foundation {has pledged|has promised} a {large|major} "
            "{grant|gift} {if|on condition that} the {finished|completed} wing {passes|meets} a "
            "{strict|demanding} {climate-control|humidity} {standard|certification} {for|needed for} "
            "{fragile|delicate|old} {fabrics|textiles}. {The fit-out|The remaining fit-out|Fitting out the "
            "wing} is {already|} {paid for|funded} {by|through} {an earlier|a separate} {donation|bequest}, "
            "so {completing|finishing} it {costs the museum nothing more|adds no cost}.",
            "{Separately|At the same time|Meanwhile}, a {hotel|property} {developer|group} {called|named} "
            "${dev} has {offered|proposed} to buy the {empty|bare} {shell|building} {and turn it into|and "
            "convert it into} {rooms|a conference hall|a hotel annexe}. {The developer's|Its} offer {is "
            "firm|stands} {for now|until the spring|for a few weeks}.",
        ),
        question="{Advising|Speaking for|Acting for} the trustees, {which option do you recommend|which path do "
                 "you choose|what do you decide}?",
        options={
            "stop": "{Stop|Halt|End} {work on the wing|the fit-out plans|the project} now[[SUNK]] and "
                    "{sell|hand over} the {shell|building} to ${dev} for €${stop_value}, {paid for certain|a "
                    "guaranteed price|a certain sum}.",
            "finish": "{Finish|Complete} the wing and {apply for|seek} the {certification|certificate}: {there "
                      "is|the museum has} a ${p_pct}% chance {that the wing passes and the foundation pays|of "
                      "passing and receiving} €${win}, and a ${q_pct}% chance {that it fails and receives|of "
                      "failing and getting} nothing.",
        },
    ),
    Scenario(
        item_id="s09",
        title="upland mineral survey",
        values={"spent": 850000, "stop_value": 400000, "win": 1600000, "p_pct": 25},
        c_values={"spent": 850000, "stop_value": 480000, "win": 1600000, "p_pct": 25},
        letters={"A": "finish", "B": "stop"},
        names={"co": "org", "hills": "place"},
        context=(
            "{A small|A junior} {exploration company|mining company}, ${co}, {holds|owns} a {licence|permit} "
            "to {survey|explore} {a stretch of|part of} the ${hills} {hills|uplands} for "
            "{lithium|copper|tin}. {It|The company} {has spent|has already spent} €${spent} {on drilling|on "
            "test drilling|on core drilling}, {mapping|maps} and {lab assays|laboratory tests}.",
            "{The first|Early} {results|samples} are {mixed|uneven|patchy}. {The final|A last|One more} "
            "{round|set} of {drill holes|boreholes} is {already paid for|already covered|paid for} {by|from} the "
            "{licence fee|original budget}, {and|so} {finishing|completing} the survey {costs nothing "
            "more|adds no cost}. {If the survey confirms|Should the survey confirm} a {rich|workable} "
            "{deposit|seam}, a {larger|major} {mining group|producer} {will buy|has agreed to buy} the "
            "licence; {if not|otherwise}, {it is worth|the licence fetches} nothing.",
            "{In the meantime|For now|At present}, a {neighbouring|rival|nearby} {prospector|explorer} has "
            "{offered|proposed} to {buy|take} the {licence|permit} and {all|the} {data|drill cores} {as things "
            "stand|before the last holes are drilled|without waiting}.",
        ),
        question="{Making|Taking} the {choice|decision} for ${co}, {which option do you take|which would you "
                 "choose|what is your call}?",
        options={
            "stop": "{Stop|Halt|End} the survey now[[SUNK]] and {sell|transfer} the {licence|permit} and "
                    "{data|drill cores} to the {neighbouring|rival} {prospector|explorer} for €${stop_value}, "
                    "{paid for certain|a guaranteed sum|a sure amount}.",
            "finish": "{Finish|Complete} the {drilling|survey}: {there is|the company faces} a ${p_pct}% chance "
                      "{that a deposit is confirmed and the licence sells|of a confirmed deposit and a sale} for "
                      "€${win}, and a ${q_pct}% chance {that nothing is found and it earns nothing|of finding "
                      "nothing, which earns nothing|that the results are poor and nothing is earned}.",
        },
    ),
    Scenario(
        item_id="s10",
        title="fig-and-cedar perfume",
        values={"spent": 95000, "stop_value": 42500, "win": 170000, "p_pct": 25},
        c_values={"spent": 95000, "stop_value": 53000, "win": 170000, "p_pct": 25},
        letters={"A": "finish", "B": "stop"},
        names={"house": "org"},
        context=(
            "${house}, {a small|an independent} {perfume house|fragrance maker}, {has been developing|has "
            "worked for months on} a {new|summer} {fragrance|scent} {based on|built around} {fig leaf|green "
            "fig|wild fig} and {cedar|vetiver}. {The house's perfumer|The chief perfumer|The perfumer in charge} has {gone "
            "through|tested|tried} {dozens|scores|hundreds} of {versions|trial blends}, and the "
            "{house|firm|company} has {spent|paid out} €${spent} on {ingredients|raw materials}, "
            "{trials|testing} and {a bottle design|bottle design|packaging design}.",
            "{One|A} {key|main} ingredient, a {natural|rare|tree} resin, {may soon be|could soon be|might "
            "be} {restricted|limited} {by|under} {new|proposed} {safety|cosmetics} {rules|regulations}. "
            "{Finishing|Completing} the {formula|fragrance} {needs|requires} {a final|one last} {stability "
            "test|safety test}, {which|and this} the {house|firm} has {already|} {paid for|prepaid}.",
            "A {department-store|retail} {chain|group} {will launch|has agreed to stock} the "
            "{scent|fragrance} {if|provided} {the resin stays allowed|the rules leave the resin alone|the "
            "resin is not restricted}. {Separately|Meanwhile|In the meantime}, a {larger|bigger} {fragrance "
            "company|perfume group} has {offered|proposed} to {buy|acquire} the {formula|unfinished formula} "
            "{and its trial data|together with the trial notes} {right away|today|now}.",
        ),
        question="{Deciding|Choosing} for ${house}, {which option do you pick|what is your decision|which do you "
                 "go with}?",
        options={
            "stop": "{Stop|Halt|End} {development|the work} now[[SUNK]] and {sell|license} the "
                    "{formula|unfinished formula} to the {larger|bigger} {group|company} for €${stop_value}, "
                    "{paid for certain|a guaranteed sum|a certain amount}.",
            "finish": "{Finish|Complete} the {formula|fragrance} and {launch|release} it: {there is|the house "
                      "has} a ${p_pct}% chance {the resin stays allowed|that the rules spare the resin} and the "
                      "{launch|scent} {earns|brings in} €${win}, and a ${q_pct}% chance {it is restricted|that "
                      "the resin is banned} and {the launch|the scent} {earns|brings in} nothing.",
        },
    ),
    Scenario(
        item_id="s11",
        title="meadow music festival",
        values={"spent": 310000, "stop_value": 210000, "win": 350000, "p_pct": 60},
        c_values={"spent": 310000, "stop_value": 260000, "win": 350000, "p_pct": 60},
        letters={"A": "stop", "B": "finish"},
        names={"town": "place", "promo": "org"},
        context=(
            "{A volunteer-run|A community|A young} {events company|festival team} is {organising|planning|"
            "preparing} a {three-day|weekend} {folk|music} festival {on|in} {farmland|a meadow|the fields} "
            "{outside|near} ${town}. {It has|The organisers have} {spent|paid out|already spent} €${spent} on "
            "{stages|a stage}, {sound equipment|a sound system}, {fencing|security} and {artist "
            "deposits|deposits for the bands}. {The line-up|The programme} {includes|features} {a dozen|twenty|"
            "several} {bands|acts}, {mostly|many of them} {local|from the region}.",
            "{Ticket sales|Advance sales} {cover|have covered} {the rest of the|all remaining} {costs|bills}, "
            "so {holding|running} the festival {costs|needs} nothing {more|extra}. {The profit|Its "
            "profit|What the festival earns}, {though|however}, {depends on|hinges on|rests on} {the "
            "weather|the forecast|one thing}: {the site|the meadow|the ground} {floods|turns to mud} {in heavy "
            "rain|after a storm|when it pours}, and {the insurers|insurance} {will not|won't} {cover|pay for} "
            "{a wash-out|a washed-out weekend|bad weather}.",
            "{A larger|A national|A big} {promoter|events group}, ${promo}, has {offered|proposed} to {take "
            "over|buy} the {bookings|contracts} and {equipment|gear} {for its own event|to use at another "
            "festival} {the same weekend|that weekend}.",
        ),
        question="{Suppose|Imagine} you {lead|are in charge of} the {organisers|festival team}: {which option do you choose|what "
                 "do you decide|which do you take}?",
        options={
            "stop": "{Cancel|Call off|Stop} the festival now[[SUNK]] and {sell|pass} the {bookings and "
                    "equipment|contracts and gear} to ${promo} for €${stop_value}, {a guaranteed payment|paid "
                    "for certain|a sure sum}.",
            "finish": "{Hold|Run|Go ahead with} the festival: {there is|the forecasters give} a ${p_pct}% chance "
                      "of {dry weather|a dry weekend} {and|, with} a profit of €${win}, and a ${q_pct}% chance of "
                      "{heavy rain|a wash-out} {and|, with} no profit {at all|whatsoever}.",
        },
    ),
    Scenario(
        item_id="s12",
        title="floating wind turbine prototype",
        values={"spent": 4200000, "stop_value": 1500000, "win": 5000000, "p_pct": 30},
        c_values={"spent": 4200000, "stop_value": 2200000, "win": 5000000, "p_pct": 30},
        letters={"A": "finish", "B": "stop"},
        names={"firm": "org", "coast": "place"},
        context=(
            "${firm}, {an engineering start-up|a young engineering firm|a small energy company}, {is "
            "building|has nearly built} a {prototype|first full-size} {floating|offshore} wind turbine "
            "{off|near} the ${coast} {coast|shore}. {It has|The firm has} {spent|paid out} €${spent} on the "
            "{tower|mast}, the {blades|rotor} and a {floating|concrete} {base|platform}.",
            "{What remains|The remaining work}, {towing|moving} the turbine {out to sea|to its mooring} and "
            "{connecting it to the grid|hooking it up}, is {covered|paid for} by an {existing|earlier} "
            "{grant|public grant}. {An energy utility|A power company|A utility} {will buy|has agreed to buy} "
            "the {design|patents} {if|provided} the prototype {survives|gets through} {a full|its first} "
            "{winter|storm season} {at sea|offshore} {without|with no} {major|serious} {damage|faults}; "
            "{otherwise|if it does not}, {no one pays|there is no sale}.",
            "{A rival|Another|A competing} {turbine maker|manufacturer} has {offered|proposed} to "
            "{buy|purchase} the {blades|rotor} and {platform|base} {now|immediately|today}, {for use in|to "
            "reuse in} its own {designs|projects|research}.",
        ),
        question="{On behalf of|Acting for|Advising} ${firm}, {which option do you take|which would you "
                 "pick|what do you decide}?",
        options={
            "stop": "{Stop|Halt|End} the {project|programme} now[[SUNK]] and {sell|hand over} the {blades and "
                    "platform|rotor and base} to the {rival|other} {maker|firm} for €${stop_value}, {paid for "
                    "certain|a guaranteed price|a sure amount}.",
            "finish": "{Finish|Complete} the {installation|prototype} and {test it|run it} {through the "
                      "winter|for a winter}: {there is|the firm has} a ${p_pct}% chance {it survives|that it "
                      "comes through} and the {utility|power company} pays €${win}, and a ${q_pct}% chance {it "
                      "is damaged|that it fails} and {nothing is paid|no payment comes}.",
        },
    ),
    Scenario(
        item_id="s13",
        title="children's encyclopedia translation",
        values={"spent": 7500, "stop_value": 4500, "win": 9000, "p_pct": 50},
        c_values={"spent": 7500, "stop_value": 5400, "win": 9000, "p_pct": 50},
        letters={"A": "finish", "B": "stop"},
        names={"press": "org"},
        context=(
            "{A two-person|A small|A tiny} {publishing house|press}, ${press}, {is translating|has been "
            "translating} a {children's|family} {encyclopedia|encyclopaedia} of {birds|insects|sea creatures} "
            "{into|for readers of} {a minority language|a regional language|its local language}. {It "
            "has|The press has} {paid out|spent} €${spent} on {translation|the translator's fees} and "
            "{picture rights|image licences} {so far|to date}, and {about|roughly} {two thirds|three "
            "quarters} of the {entries|articles} are {done|finished|translated}.",
            "{The remaining|The rest of the} {entries|articles} {will be|are being} {translated|done} by "
            "{volunteers|a volunteer group} {at no cost|without charge|for free}. {Sales depend on|Income "
            "depends on|The money depends on} {one|a single} {schools|education} {grant|scheme}: {the regional|a "
            "regional} {education office|school board} {will|may} {buy|order} {copies|a set} for {every|each} "
            "{school|library} {if|provided} it {approves|accepts} the {book|title}.",
            "{Also|In addition|Separately}, a {larger|bigger} {publisher|press} has {offered|proposed} to "
            "{buy|take over} the {finished|translated} {entries|part} {and the picture rights|with the image "
            "licences} {to use in its own edition|for an online version|for a web edition}.",
        ),
        question="{If you ran|If you managed|As the head of} ${press}, {which option would you choose|what "
                 "would you do|which would you take}?",
        options={
            "stop": "{Stop|Halt|End} the translation now[[SUNK]] and {sell|hand over} the {finished "
                    "entries|translated part} to the {larger|bigger} {publisher|press} for €${stop_value}, "
                    "{paid for certain|a guaranteed fee|a sure amount}.",
            "finish": "{Finish|Complete} the {translation|book} and {submit it|put it forward} {to the "
                      "schools scheme|for approval}: there is a ${p_pct}% chance {that it is approved and "
                      "brings in|of approval and an order worth} €${win}, and a ${q_pct}% chance {that it is "
                      "turned down and earns|of rejection, which brings} nothing.",
        },
    ),
    Scenario(
        item_id="s14",
        title="geothermal greenhouse farm",
        values={"spent": 520000, "stop_value": 96000, "win": 240000, "p_pct": 40},
        c_values={"spent": 520000, "stop_value": 150000, "win": 240000, "p_pct": 40},
        letters={"A": "finish", "B": "stop"},
        names={"coop": "org", "village": "place"},
        context=(
            "{A growers' cooperative|A farming cooperative|A group of farmers}, ${coop}, {is building|has been "
            "building} a {heated|geothermal} greenhouse {farm|complex} {near|outside} ${village} to grow "
            "{tomatoes|peppers|winter salad}. {The cooperative|The group} has {spent|paid out} €${spent} on "
            "{frames|steel frames}, {glass|glazing} and {irrigation|watering systems}, and {the "
            "structure|the greenhouse} is {nearly|almost} {complete|finished}.",
            "{The heating|Heat} {will come|is meant to come} from a {warm-water|geothermal} {well|borehole} "
            "{that is still being drilled|which is not yet finished|still being drilled}. {The drilling|The "
            "rest of the drilling} {is covered|is paid for} {by|under} a {fixed-price|fixed} {contract|deal}, "
            "so {finishing|completing it} {costs nothing more|costs nothing extra|adds no further cost}. {No "
            "one|Nobody} {knows|can say} {yet|for sure} {whether|if} the {water|well} will {be|run} {hot "
            "enough|warm enough} {for winter crops|to heat the glass|in the cold months}.",
            "{A market-garden|A nursery|A garden-centre} {chain|business} has {offered|proposed} to "
            "{buy|take} the {glass|glazing} and {frames|steelwork} {to reuse|for reuse} {at its own "
            "sites|elsewhere|in its nurseries}.",
        ),
        question="{As adviser to|Advising|Acting for} ${coop}, {which option do you choose|which would you "
                 "pick|what do you decide}?",
        options={
            "stop": "{Stop|Halt|End} the {project|build} now[[SUNK]] and {sell|hand over} the {glass and "
                    "frames|glazing and steelwork} to the {nursery chain|buyer} for €${stop_value}, {paid for "
                    "certain|a fixed sum|a guaranteed price}.",
            "finish": "{Finish|Complete} the {well|borehole} and {start growing|open the greenhouses}: {there "
                      "is|the cooperative has} a ${p_pct}% chance {the water is hot enough|that the well runs "
                      "hot enough} and the {first|opening} {seasons|years} {earn|bring in} €${win}, and a "
                      "${q_pct}% chance {it is too cool|that the water is too cold} and {nothing is earned|the "
                      "farm earns nothing}.",
        },
    ),
    Scenario(
        item_id="s15",
        title="warehouse picking robot",
        values={"spent": 1900000, "stop_value": 700000, "win": 3500000, "p_pct": 20},
        c_values={"spent": 1900000, "stop_value": 960000, "win": 3500000, "p_pct": 20},
        letters={"A": "finish", "B": "stop"},
        names={"firm": "org", "buyer": "org"},
        context=(
            "${firm}, {a robotics firm|a maker of warehouse machines|a small automation company}, {has been "
            "developing|is developing} a {robot arm|sorting robot} {that|which} {grabs|can pick|is meant to "
            "pick} {mixed|loose} items {from|off} {warehouse shelves|storage bins}. {Development|The project} "
            "has {cost|taken} €${spent} {over|across} {two|three} years, {mostly on engineers and test "
            "rigs|largely in engineering time and prototypes}.",
            "{Early tests were|The first trials were} {mixed|uneven|patchy}: the arm {sometimes|now and then|at "
            "times} {drops|misses|fumbles} {soft|odd-shaped} {parcels|items}. {A big|A large|A national} {parcel|delivery} {company|operator} {will order|has promised to "
            "buy} {a fleet|many units} {if|provided} the robot {reaches|hits} a {target|required} {picking "
            "speed|pick rate} {in|during} a {month-long|one-month} {trial|pilot}. {The remaining|The last} "
            "{software work|tuning} {is prepaid|has been paid for|is covered by a grant}, so {finishing costs "
            "nothing more|there is no further cost to finish}.",
            "{A supplier|A parts maker|An industrial-equipment firm} {called|named} ${buyer} has "
            "{offered|proposed} to {buy|purchase} the {prototypes|robot prototypes} and {patents|designs} "
            "{today|now|as they stand}.",
        ),
        question="{Imagine|Suppose} you {decide|make the call} for ${firm}. {Which option do you choose|Which "
                 "do you pick|What is your choice}?",
        options={
            "stop": "{Stop|Halt|End} {development|the project} now[[SUNK]] and {sell|transfer} the {prototypes "
                    "and patents|robots and designs} to ${buyer} for €${stop_value}, {paid for certain|a "
                    "guaranteed sum|a sure amount}.",
            "finish": "{Finish|Complete} the robot and {run|enter} the trial: {there is|the firm has} a "
                      "${p_pct}% chance {it hits the target|that it reaches the target} and {wins|earns} {an "
                      "order|the order} worth €${win}, and an ${q_pct}% chance {it falls short|that it misses} "
                      "and {earns|brings in} nothing.",
        },
    ),
)


def derive(values: Mapping[str, int], item: str = "?") -> dict[str, int]:
    """The chance that finishing pays nothing."""
    return {"q_pct": 100 - values["p_pct"]}


def lotteries(values: Mapping[str, int], derived: Mapping[str, int]) -> Lotteries:
    """Stopping recovers ``stop_value`` for certain; finishing pays ``win`` with chance ``p_pct`` %, else nothing."""
    return {
        "stop": [[1, 1, values["stop_value"]]],
        "finish": [[values["p_pct"], 100, values["win"]], [derived["q_pct"], 100, 0]],
    }


def biased_reader(role: str, v: Mapping[str, int], shown: str) -> float:
    """Mental accounting: the sunk amount is a prior loss, and once more a loss to avoid where the stop option names it."""
    spent, p = v["spent"], v["p_pct"] / 100
    if role == "stop":
        score = cpt([(1.0, v["stop_value"] - spent)])
        if shown == "sunk":
            score += value(-spent)
    else:
        score = cpt([(p, v["win"] - spent), (1 - p, -spent)])
    return score


FAMILY = Family(
    name="sunk_cost_fallacy",
    roles=("stop", "finish"),
    value_keys=("spent", "stop_value", "win", "p_pct"),
    # The sunk-cost default is to finish, so C raises ``stop_value`` and stopping dominates.
    c_dominant_role="stop",
    c_changed_key="stop_value",
    derive=derive,
    lotteries=lotteries,
    scenarios=SCENARIOS,
    open_lane=False,
    rates_paragraph=False,
    required_numbers={"plain": ("spent", "stop_value", "win", "p_pct", "q_pct"),
                      "sunk": ("spent", "stop_value", "win", "p_pct", "q_pct")},
    biased_reader_model="prospect-theory mental accounting with the sunk amount as a prior loss (Thaler 1980; "
                        "Arkes & Blumer 1985), 1992 parameters; the amount named in the stop option counts "
                        "once more as a loss to avoid",
    biased_reader=biased_reader,
    sunk_role="stop",
    wording_rule="wording_sunk",
)
