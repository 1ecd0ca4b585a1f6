"""Base-rate neglect: betting on one flagged unit after an imperfect check.

Fifteen fictional screening problems.  In each, a check that is right most of
the time has flagged one particular unit (a crate, a seed batch, an email, a
cork, a bolt, ...) out of a population in which true cases are uncommon.  The
reader bets either that the flagged unit is a true case (role ``case``) or
that it is not (role ``clear``); the payouts give both bets the same expected
value.  The rates are stated in one paragraph, as percentages (``rates_pct``)
or, in the ``wording`` type's B, as natural frequencies (``rates_freq``).
"""
from typing import Mapping

from panels.family import Family, Lotteries, Scenario, whole

SCENARIOS = (
    Scenario(
        item_id="s01",
        title="counterfeit watch crates",
        values={"population": 1000, "base_pct": 2, "sens_pct": 90, "fpr_pct": 5, "pay_case": 490, "pay_clear": 180},
        c_values={"population": 1000, "base_pct": 2, "sens_pct": 90, "fpr_pct": 5, "pay_case": 490, "pay_clear": 4900},
        letters={"A": "case", "B": "clear"},
        names={"port": "place", "firm": "org"},
        context=(
            "{At|In} the {harbour|port} of ${port}, {customs officers|the customs team|a customs unit} "
            "{inspect|examine|screen} {crates|shipping crates|cargo crates} {declared as|listed as|labelled as} "
            "{wristwatches|watches|timepieces} {as they come|when they arrive|once they are unloaded} {off|from} "
            "the {cargo ships|freighters|container ships}. {Some of those crates|A share of them|A number of such "
            "crates} {hold|contain|are packed with} {counterfeit|fake|forged} {watches|timepieces} "
            "{bearing|carrying|stamped with} {copied|imitation|stolen} {brand marks|logos|trademarks}.",
            "{Before|Ahead of the hand search, before} {any crate is opened|a crate is opened by hand|a crate "
            "is unsealed}, "
            "{it is rolled|it passes|it is wheeled} through an {X-ray|imaging} scanner {that|which} "
            "{looks for|searches for|is tuned to spot} the {internal shapes|tell-tale outlines|metal patterns} "
            "of {cheap|low-grade|imitation} {movements|watch mechanisms}. {This morning|Earlier today|An hour ago}, "
            "the scanner {flagged|raised an alert on|marked} {one particular|a single|one} crate {from|off} a "
            "{freighter|container ship} {chartered by|belonging to|operated by} ${firm}. {Nothing else is known "
            "about this crate.|No other information singles it out.|Apart from the alert, nothing sets it apart.}",
            "{While|As} the crate {waits|sits|stands} {in the inspection bay|for a hand search|unopened}, the "
            "{shift supervisor|senior officer|team leader} {sets up|organises|runs} a {small|friendly} "
            "{training|practice} {wager|bet} for {you|you and the other recruits|the trainees, you included}, "
            "{paid from|funded by|backed by} the "
            "{team's|office's} {prize fund|training budget}. {You may|Each person may|You can} "
            "{place|make|choose} {only one|just one|a single} {bet|wager} {on|about} "
            "{what is inside|the crate's contents|what the crate holds}.",
        ),
        rates_pct=(
            "{Port records|The customs records|Years of records} {show|indicate} that ${base_pct}% of "
            "{watch crates|crates of watches} {arriving here|landing at this port|coming through this port} "
            "{hold|contain} {counterfeits|fake watches}. {The scanner|This scanner} flags ${sens_pct}% of "
            "{the crates that do hold fakes|crates that really contain fakes|crates with counterfeits inside}, "
            "{and it also|but it also|yet it also} flags ${fpr_pct}% of {the crates that hold none|crates with only "
            "genuine watches|crates that are entirely genuine}."
        ),
        rates_freq=(
            "{Port records|The customs records|Years of records} {show|indicate} that {out of every|of every|for "
            "every} ${population} {watch crates|crates of watches} {arriving here|landing at this port|coming "
            "through this port}, ${true_n} {hold|contain} {counterfeits|fake watches}. {The scanner|This scanner} "
            "flags ${flagged_true} of {those|these} ${true_n} {crates|}, {and it also|but it also|yet it also} flags "
            "${flagged_false} of the {other|remaining} ${others}, {which hold none|whose watches are all "
            "genuine|which contain no fakes}."
        ),
        rates_at=2,
        question="{Which bet|Which of the two bets|Which wager} {do you place|will you place|would you make}"
                 "{ on the flagged crate| on that crate|}?",
        options={
            "case": "{Bet that|Wager that} {the flagged crate|this crate|the crate} {does hold|really contains|is "
                    "full of} {counterfeit|fake} watches: {you win|you are paid|it pays} €${pay_case} if {so|fakes "
                    "are found|that proves true}, {and|but} nothing {if it holds none|otherwise|if the "
                    "watches are genuine}.",
            "clear": "{Bet that|Wager that} {the flagged crate|this crate|the crate} {holds only genuine "
                     "watches|contains no fakes|is clean}: {you win|you are paid|it pays} €${pay_clear} if {the "
                     "watches prove genuine|no fakes are found|that proves true}, {and|but} nothing {if any fakes are "
                     "found|otherwise|if fakes turn up}.",
        },
    ),
    Scenario(
        item_id="s02",
        title="seed batch germination",
        values={"population": 200, "base_pct": 10, "sens_pct": 80, "fpr_pct": 10, "pay_case": 90, "pay_clear": 80},
        c_values={"population": 200, "base_pct": 10, "sens_pct": 80, "fpr_pct": 10, "pay_case": 90, "pay_clear": 400},
        letters={"A": "case", "B": "clear"},
        names={"lab": "org", "region": "place"},
        context=(
            "{The seed-testing lab|The seed laboratory|A seed lab} {run by|operated by|belonging to} ${lab} "
            "{checks|tests|screens} {batches of|lots of} {vegetable|bean and pea|cabbage and onion} seed "
            "{for|on behalf of} {growers|farmers|market gardeners} {around|across|throughout} ${region}. "
            "{Some batches|A portion of the batches|Certain lots} {have lost their vigour|have lost most of their "
            "life|have gone stale} {in storage|after a damp winter|through poor storage} and {will barely "
            "germinate|would fail in the field|would sprout poorly if sown}.",
            "{A full|The proper|A reliable} {grow-out|germination trial} {takes|needs|lasts} {several|three|a "
            "few} weeks, so the lab {first runs|begins with|starts by using} a {quick|rapid|same-day} {dye "
            "test|colour test|chemical test} {that colours|which tints|that dyes} {living|healthy} {seed "
            "tissue|embryos}. {Yesterday|This week|On Monday}, {that quick test|the rapid test|the dye test} "
            "{flagged|marked|picked out} {one particular|a single|one} batch as {a likely dud|probably dead|a "
            "poor germinator}. {Beyond that result, nobody knows anything unusual about it.|Apart from the flag, "
            "nothing about that batch stands out.|Other than that, no one can tell a thing about this lot.}",
            "{At|During} the {lab's|staff's} {quarterly|seasonal|end-of-month} {prediction game|guessing "
            "game|quiz}, {the manager|the head technician|the lab's director} {invites you to place|lets you "
            "place|asks you to make} {one bet|a single bet|one wager} on {the outcome|the result} of {that "
            "batch's|the flagged batch's} {grow-out|full trial}, {with prize money from the social "
            "fund|with a prize paid from the staff fund|funded out of the coffee-club savings}.",
        ),
        rates_pct=(
            "{Over the years|Across past seasons|From long experience}, ${base_pct}% of {the batches|seed lots} "
            "{sent in|submitted|brought} to {the lab|this lab} {have turned out|have proved|were found} to be "
            "{duds|dead|poor germinators}. The {quick|rapid|dye} test {flags|marks|picks out} ${sens_pct}% of "
            "{those dud batches|the batches that really are duds|the lots that truly are dead}, {and it "
            "also|while it also|but it also} {flags|marks} ${fpr_pct}% of {the healthy ones|batches that "
            "germinate well|the lots that are fine}."
        ),
        rates_freq=(
            "{Over the years|Across past seasons|From long experience}, {out of every|for every|of each} "
            "${population} {batches|seed lots} {sent in|submitted|brought} to {the lab|this lab}, ${true_n} "
            "{have turned out|have proved|were found} to be {duds|dead|poor germinators}. The {quick|rapid|dye} "
            "test {flags|marks|picks out} ${flagged_true} of {those|these} ${true_n}, {and it also|while it "
            "also|but it also} {flags|marks} ${flagged_false} of the {other|remaining} ${others}, {which are "
            "healthy|which germinate well|which are fine}."
        ),
        rates_at=2,
        question="{Which bet|Which of the two bets|Which wager} {do you place|will you make|do you "
                 "choose}{ on this batch| on the flagged batch|}?",
        options={
            "case": "{Bet that|Wager that|Stake your bet that} {the batch|the flagged batch|this lot} {really "
                    "is|is indeed|truly is} a {dud|poor germinator}: {you win|you collect|it pays} €${pay_case} "
                    "if {the grow-out|the full trial} {confirms it|bears it out|proves you right}, {and "
                    "nothing|nothing} {otherwise|if it germinates well|if it sprouts well}.",
            "clear": "{Bet that|Wager that|Stake your bet that} {the batch|the flagged batch|this lot} {is "
                     "healthy after all|will germinate well|is actually fine}: {you win|you collect|it pays} "
                     "€${pay_clear} if {the grow-out|the full trial} {confirms it|bears it out|proves you "
                     "right}, {and nothing|nothing} {otherwise|if it turns out to be a dud|if it fails to "
                     "sprout}.",
        },
    ),
    Scenario(
        item_id="s03",
        title="phishing filter at a small office",
        values={"population": 20000, "base_pct": 1, "sens_pct": 95, "fpr_pct": 2, "pay_case": 198, "pay_clear": 95},
        c_values={"population": 20000, "base_pct": 1, "sens_pct": 95, "fpr_pct": 2, "pay_case": 198, "pay_clear": 4200},
        letters={"A": "case", "B": "clear"},
        names={"firm": "org", "town": "place"},
        context=(
            "${firm} is a {small|modest|family-run} {firm of|practice of|office of} {surveyors|architects|"
            "bookkeepers} {in|based in} ${town}, {with|employing} {about a dozen|fewer than twenty|a handful of} "
            "staff. {Like most offices|As at any firm|Like everyone else}, it {receives|gets} {a steady stream "
            "of|a great many|lots of} {emails|messages}, and {a few|some|a small share} of them are {phishing "
            "attempts|fraudulent|scams} {designed to|meant to|trying to} {steal passwords|trick staff into paying "
            "fake invoices|harvest login details}.",
            "{Its|The firm's} {mail|email} {filter|screening software} {checks|inspects|reads} {every incoming "
            "message|each message as it arrives|all incoming mail} and {moves|shifts|sends} {suspicious "
            "ones|anything suspicious|the ones it distrusts} {into|to} a {quarantine folder|holding "
            "folder|quarantine}. {This morning|Just after lunch|Earlier today}, {it|the filter} "
            "{quarantined|held back|caught} {one particular|a single|one} {message|email} {addressed to|sent "
            "to|meant for} the {office manager|senior partner|accounts clerk}. {Nothing in it stands out beyond "
            "the filter's flag.|No detail of the header gives anything away.|Apart from the software's verdict, "
            "nothing is known about it.}",
            "{Before|Even before} {anyone|a member of staff} {opens|examines} {it|the message} "
            "{properly|by hand|safely}, the {IT contractor|outside IT adviser|firm's technician}, {who is "
            "running|running} a {security awareness|cyber-safety|phishing awareness} {morning|session|day} "
            "{for the staff|at the office|}, {offers|puts up} {a small cash prize|prize money} for "
            "{whoever|anyone who} {plays along|takes part|joins in}. {You may place|You can make|Each person may "
            "place} {only one|just one|a single} {bet|wager}.",
        ),
        rates_pct=(
            "{According to|Going by|Judging from} {the filter vendor's|the filter supplier's|the filter's} "
            "{statistics|logs|records}, ${base_pct}% of {the emails|the messages|incoming emails} {this firm "
            "receives|reaching the office|arriving at the firm} are {phishing|scams|fraudulent}. The "
            "filter {quarantines|catches|holds back} ${sens_pct}% of {phishing emails|the scam messages|those "
            "fraudulent messages} {and|but also|and also} {quarantines|catches|holds back} ${fpr_pct}% of {the "
            "legitimate ones|harmless messages|ordinary, honest emails}."
        ),
        rates_freq=(
            "{According to|Going by|Judging from} {the filter vendor's|the filter supplier's|the filter's} "
            "{statistics|logs|records}, {out of|of|among} ${population} {emails|messages} {this firm "
            "receives|reaching the office|arriving at the firm}, ${true_n} are {phishing|"
            "scams|fraudulent}. The filter {quarantines|catches|holds back} ${flagged_true} of {those|these} "
            "${true_n} {and|but also|and also} {quarantines|catches|holds back} ${flagged_false} of the "
            "{other|remaining} ${others}, {which are legitimate|which are harmless|all ordinary, honest emails}."
        ),
        rates_at=3,
        question="{Which|Which one} of {the|these} two {bets|wagers} {do you take|will you place|do you go for}?",
        options={
            "case": "{Bet that|Wager that} {the quarantined email|the held message|this email} {is|really "
                    "is|truly is} {a phishing attempt|a scam|fraudulent}: {you get|you win|the prize is} "
                    "€${pay_case} if {the check|the manual check|inspection} {confirms it|bears that "
                    "out|proves it}, {and|} nothing {if it turns out to be harmless|if it is genuine|otherwise}.",
            "clear": "{Bet that|Wager that} {the quarantined email|the held message|this email} {is|really "
                     "is|is in fact} {harmless|legitimate|an ordinary, honest message}: {you get|you win|the "
                     "prize is} €${pay_clear} if {the check|the manual check|inspection} {confirms it|bears that "
                     "out|proves it}, {and|} nothing {if it turns out to be a scam|if it is phishing|otherwise}.",
        },
    ),
    Scenario(
        item_id="s04",
        title="cork taint sensor at a winery",
        values={"population": 500, "base_pct": 20, "sens_pct": 70, "fpr_pct": 10, "pay_case": 80, "pay_clear": 140},
        c_values={"population": 500, "base_pct": 20, "sens_pct": 70, "fpr_pct": 10, "pay_case": 80, "pay_clear": 210},
        letters={"A": "clear", "B": "case"},
        names={"winery": "org", "hill": "place"},
        context=(
            "{The winery|The wine estate|A small winery called|A small wine estate named} ${winery}, {on|up on} "
            "the {slopes|hillsides} {above|near|outside} "
            "${hill}, {buys|orders|imports} {natural|bark} corks {by the sack|in large sacks|in bulk}. {A "
            "share of such corks|Some natural corks|A fraction of these corks} {carry|are spoiled by|harbour} a "
            "{musty|mouldy|damp-cardboard} {taint|off-odour} {that can|which will} {ruin|spoil} {the wine in any "
            "bottle it touches|any bottle sealed with such a cork}.",
            "{To catch them|To weed them out|To find the tainted ones}, {the cellar team|the cellar hands|the "
            "winemakers} {soak|steep} {each cork|every cork} {in a jar|in a small jar|in a glass} {of water|of "
            "warm water} {overnight|for a day} and {test the water with|check each sample on|run the water through} a "
            "{handheld|portable|bench} {vapour|odour|chemical} {sensor|analyser|sniffer}. {Today|This "
            "afternoon|At the end of the day} {it|the device} {beeped on|gave an alarm for|signalled a problem "
            "with} {one "
            "particular|a single|one} cork {taken|drawn|pulled} {at random|} from a {fresh|new|newly opened} "
            "sack. {There is no other clue about that cork.|Nothing else is known about it.|No further evidence "
            "about it exists.}",
            "{A visiting|A guest|The estate's visiting} {wine merchant|sommelier|importer} and "
            "the {cellar master|head winemaker|estate manager} {agree to|decide to|plan to} {settle|test} {a "
            "friendly argument|a disagreement|the matter} {with|by means of|using} a {lab analysis|laboratory "
            "test|proper lab test}, {and|so} they {ask|invite} you to {pick one side|choose a side|place one bet} "
            "{first|beforehand|before the result comes back}. {The estate|The winery|The estate itself} "
            "{pays out|covers|funds} {the winnings|the prize|any winnings}.",
        ),
        rates_pct=(
            "{From|Based on|According to} {the cork supplier's|the estate's own|several seasons of} "
            "{records|figures|data}, ${base_pct}% of {corks|the corks} {from|in} {these sacks|this supplier's "
            "sacks|sacks like these} are {tainted|spoiled|musty}. The {sensor|analyser|sniffer} {sounds|beeps|"
            "raises the alarm} {for|on} ${sens_pct}% of {tainted corks|the spoiled ones|corks that really are "
            "musty}, and {it also|also} {sounds|beeps|raises the alarm} {for|on} ${fpr_pct}% of {clean corks|the "
            "sound ones|corks that are perfectly fine}."
        ),
        rates_freq=(
            "{From|Based on|According to} {the cork supplier's|the estate's own|several seasons of} "
            "{records|figures|data}, {out of every|for every|in a typical batch of} ${population} corks "
            "{from|in} {these sacks|this supplier's sacks|sacks like these}, ${true_n} are {tainted|spoiled|"
            "musty}. The {sensor|analyser|sniffer} {sounds|beeps|raises the alarm} {for|on} ${flagged_true} of "
            "{those|these} ${true_n}, and {it also|also} {sounds|beeps|raises the alarm} {for|on} ${flagged_false} of "
            "the {other|remaining} ${others} {clean corks|corks, which are sound|corks, which are perfectly fine}."
        ),
        rates_at=2,
        question="{Which side|Which bet|Which of the two bets} {do you take|do you pick|will you back}?",
        options={
            "case": "{Bet that|Back the view that|Wager that} {the cork|this cork|the flagged cork} {is "
                    "tainted|really is musty|is spoiled}: {you receive|you win|you are paid} €${pay_case} if the "
                    "{lab|laboratory} {finds taint|confirms the taint|detects the musty compound}, {and|but} "
                    "nothing {if it is clean|if the cork is sound|otherwise}.",
            "clear": "{Bet that|Back the view that|Wager that} {the cork|this cork|the flagged cork} {is "
                     "clean|is perfectly sound|is not tainted at all}: {you receive|you win|you are paid} "
                     "€${pay_clear} if the {lab|laboratory} {finds no taint|clears it|finds nothing wrong}, "
                     "{and|but} nothing {if it is tainted|if the taint is confirmed|otherwise}.",
        },
    ),
    Scenario(
        item_id="s05",
        title="pigment scan at an auction house",
        values={"population": 5000, "base_pct": 4, "sens_pct": 85, "fpr_pct": 15, "pay_case": 360, "pay_clear": 85},
        c_values={"population": 5000, "base_pct": 4, "sens_pct": 85, "fpr_pct": 15, "pay_case": 360, "pay_clear": 2300},
        letters={"A": "case", "B": "clear"},
        names={"house": "org", "city": "place"},
        context=(
            "${house}, {an auction house|a saleroom|a firm of art auctioneers} in ${city}, {takes in|receives|"
            "handles} {a great many|countless|hundreds upon hundreds of} {oil paintings|old canvases|paintings} "
            "{each year|every year} from {private sellers|estates|house clearances}. {Among them|Mixed in with "
            "them|Hidden among these} are {some|a few|occasional} {forgeries|fakes|skilful copies passed off as "
            "originals}, {painted|produced|created} {much later|decades later|recently} and {aged|made to look "
            "old} {on purpose|deliberately|by their makers}.",
            "{Every|Each} {canvas|painting|picture} {goes through|is put through} a {quick|rapid|portable} "
            "{pigment scan|paint analysis|spectral scan} {that looks for|that hunts for|which detects} "
            "{paints|pigments} {invented|that only came into use|first made} {after|later than} the "
            "{claimed|supposed|stated} date. {Last week|On Tuesday|Recently} the scan {flagged|raised doubts "
            "about|marked} {one particular|a single|one} {landscape|seascape|still life} {sent in|consigned|"
            "offered} by {an anonymous seller|a private owner|a house-clearance firm}. {Apart from that flag, "
            "nothing about the painting stands out.|Nothing else about the picture is unusual.|Beyond the scan "
            "result, its history looks entirely ordinary.}",
            "{Before|Until} {a full|a proper} {laboratory|expert} {examination|study} {settles|decides} the "
            "{matter|question}, the {house's|firm's} director, {who likes|who enjoys|fond of} a {wager|bet|"
            "flutter}, {offers you|invites you to take} {one of two|a choice of two} {bets|wagers} {at no cost "
            "to you|that cost you nothing|paid out of the director's own pocket}. {You|As a consultant you} "
            "{may|can} {accept|take} {only one|just one}.",
        ),
        rates_pct=(
            "{The house's|Their|The firm's} {own records|past records|long records} {suggest|show} that "
            "${base_pct}% of {the paintings it receives|consigned paintings|pictures sent in for sale} are "
            "{forgeries|fakes}. The {pigment|paint|spectral} scan {flags|raises doubts about} ${sens_pct}% of "
            "{forgeries|the fakes|real forgeries}, and {it also flags|it also raises doubts about|also flags} "
            "${fpr_pct}% of {genuine paintings|the genuine works|authentic pictures}, {usually because of|often "
            "because of|mostly owing to} {later restoration|old retouching|repairs made over the years}."
        ),
        rates_freq=(
            "{The house's|Their|The firm's} {own records|past records|long records} {suggest|show} that {out "
            "of|of|among} ${population} {paintings it receives|consigned paintings|pictures sent in for sale}, "
            "${true_n} are {forgeries|fakes}. The {pigment|paint|spectral} scan {flags|raises doubts about} "
            "${flagged_true} of {those|these} ${true_n}, and {it also flags|it also raises doubts about|also "
            "flags} ${flagged_false} of the {other|remaining} ${others}, {which are genuine|all of them "
            "authentic|though those are authentic}, {usually because of|often because of|mostly owing to} {later "
            "restoration|old retouching|repairs made over the years}."
        ),
        rates_at=2,
        question="{Which|Which one} of the {two|} {bets|wagers} {do you accept|do you choose|will you take}?",
        options={
            "case": "{Bet that|Wager that|Back the claim that} {the flagged painting|this picture|the "
                    "canvas} {is a forgery|really is a fake|is not genuine}: {you win|the director pays "
                    "you|you receive} €${pay_case} if {the laboratory|the expert study|the full examination} "
                    "{confirms it|shows it|proves it}, {and|but} nothing {if it is genuine|otherwise|if the "
                    "work is authentic}.",
            "clear": "{Bet that|Wager that|Back the claim that} {the flagged painting|this picture|the canvas} "
                     "{is genuine|really is authentic|is no forgery}: {you win|the director pays you|you "
                     "receive} €${pay_clear} if {the laboratory|the expert study|the full examination} "
                     "{confirms it|shows it|proves it}, {and|but} nothing {if it is a fake|otherwise|if it "
                     "turns out forged}.",
        },
    ),
    Scenario(
        item_id="s06",
        title="damage camera after a lorry crash",
        values={"population": 2000, "base_pct": 30, "sens_pct": 60, "fpr_pct": 20, "pay_case": 140, "pay_clear": 180},
        c_values={"population": 2000, "base_pct": 30, "sens_pct": 60, "fpr_pct": 20, "pay_case": 140, "pay_clear": 240},
        letters={"A": "case", "B": "clear"},
        names={"depot": "place", "courier": "org"},
        context=(
            "{A delivery lorry|A lorry|A heavy lorry} {belonging to|run by|operated by} the {courier firm|parcel "
            "carrier} ${courier} {skidded off|slid off|left} {an icy road|a wet road|the road} "
            "{near|outside|just before} ${depot} and {tipped onto its side|rolled over|overturned} {in a "
            "ditch|on the verge|into a field}. {Nobody was hurt|The driver walked away unhurt|No one was "
            "injured}, but {the load was thrown about|its cargo was shaken badly|the parcels inside were tossed "
            "around}, and {many|plenty of|a good number of} {parcels|boxes} {now|probably} {contain|hold} "
            "{broken|cracked|damaged} {goods|items|crockery}.",
            "{At the depot|Back at the depot|Once recovered}, {every|each} parcel {from the lorry|from the "
            "crash|from that load} {rolls|travels|moves} {along|down} a {conveyor|belt} {under|beneath|past} a "
            "{camera|camera system|scanning camera} {that|which} {looks for|checks for|searches for} {dents|crushed "
            "corners|signs of crushing} and {rattling|loose|shifted} {contents|items}. {Shortly before "
            "closing|This evening|Late in the shift}, it {pushed|diverted|kicked} {one particular|a single|one} "
            "{parcel|box} {onto|into} the {damage lane|side chute|inspection bay}. {Nothing else marks it "
            "out.|No other detail sets it apart.|Not one other fact is known about it.}",
            "The {box|parcel} {will|is going to} be {opened|unpacked} {tomorrow|in the morning} {by its "
            "owner|in front of its recipient|with the sender's permission}. {Meanwhile|Until then|In the "
            "meantime}, {the depot manager|the shift supervisor|the night manager} {runs|holds|organises} a "
            "{canteen|break-room|staff} {sweepstake|guessing game} {on|about} {its contents|what will be found "
            "inside|that box}, {with prizes|with prize money|paid for} {from|out of} {the staff social fund|the "
            "tea fund|the depot's social budget}, and you {may|can|are allowed to} {join in|take part|enter} "
            "with {one|a single} bet.",
        ),
        rates_pct=(
            "{Records of|Figures from|Reports on} {crashes like this|earlier accidents|similar "
            "crashes} {suggest|show|indicate} that ${base_pct}% of the parcels {on such a lorry|in a load like "
            "this|on board} {end up damaged inside|are broken inside|end up with broken contents}. The depot's "
            "{camera|imaging} {system|unit} {flags|diverts|catches} ${sens_pct}% of {the damaged "
            "parcels|parcels that really are damaged|those broken parcels} and {also flags|also diverts|wrongly "
            "catches} ${fpr_pct}% of {the undamaged ones|parcels whose contents are fine|intact parcels}."
        ),
        rates_freq=(
            "{Records of|Figures from|Reports on} {crashes like this|earlier accidents|similar "
            "crashes} {suggest|show|indicate} that {out of|of|among} ${population} parcels {on such a lorry|in "
            "a load like this|on board}, ${true_n} {end up damaged inside|are broken inside|end up with broken "
            "contents}. The depot's {camera|imaging} {system|unit} {flags|diverts|catches} ${flagged_true} of "
            "{those|these} ${true_n} and {also flags|also diverts|wrongly catches} ${flagged_false} of the "
            "{other|remaining} ${others}, {whose contents are fine|which are undamaged|which are intact}."
        ),
        rates_at=2,
        question="{Which|Which one} of the two {bets|sweepstake bets|entries} {do you put your name to|do you "
                 "enter|do you choose}?",
        options={
            "case": "{Bet that|Enter the bet that|Predict that} {the diverted parcel|the box|the flagged box} "
                    "{holds|contains} {broken|damaged|smashed} {goods|contents}: {you take|you win|the prize is} "
                    "€${pay_case} if {it does|that is what the owner finds|the contents are damaged}, {and|but} "
                    "nothing {if everything inside is intact|otherwise|if the contents are fine}.",
            "clear": "{Bet that|Enter the bet that|Predict that} {the diverted parcel|the box|the flagged box} "
                     "{holds|contains} {undamaged|intact|unbroken} {goods|contents}: {you take|you win|the prize "
                     "is} €${pay_clear} if {it does|that is what the owner finds|nothing inside is broken}, "
                     "{and|but} nothing {if anything inside is broken|otherwise|if the contents are damaged}.",
        },
    ),
    Scenario(
        item_id="s07",
        title="fake coins in an arcade machine",
        values={"population": 800, "base_pct": 5, "sens_pct": 75, "fpr_pct": 25, "pay_case": 380, "pay_clear": 60},
        c_values={"population": 800, "base_pct": 5, "sens_pct": 75, "fpr_pct": 25, "pay_case": 380, "pay_clear": 1300},
        letters={"A": "case", "B": "clear"},
        names={"town": "place", "arcade": "org"},
        context=(
            "{On|Along} the {seafront|promenade|harbour front} {at|in} ${town}, {an old|an ageing|a "
            "long-established} {amusement arcade|games arcade} {called|named|known as} ${arcade} {still runs|"
            "keeps|still has} {coin-operated|coin-fed} {machines|games|pushers}. {Now and then|Every so "
            "often|From time to time}, {visitors|players|customers} {slip in|feed in|try} {fake "
            "coins|counterfeit coins|forged coins} {made of|cast from|stamped out of} {cheap|soft|base} "
            "{metal|alloy|lead}.",
            "{Every|Each} coin {dropped into|fed into|put into} a machine {passes|goes past|runs through} an "
            "{electronic|old electronic|ageing} {coin checker|coin validator|coin tester} {that weighs it|that "
            "measures its weight|which measures its size and weight}. {Coins it rejects drop|Coins it "
            "distrusts fall|Any coin it doubts rolls} {into|down to} a {separate|small} {tray|reject tray}. {When "
            "emptying the machines|At closing time|During the evening count}, the owner {finds|"
            "notices|picks out} {a single|one} coin {in that tray|in the reject tray|among the rejects}. "
            "{Nothing else is known about it.|No other detail can be said about this coin.|Nothing more about "
            "it stands out.}",
            "{The owner|The arcade's owner} and {a friend|an old friend|a regular} who "
            "{collects coins|is a coin collector|deals in old coins} {will|plan to|are going to} "
            "{test|check} {it|the coin} {properly|later|tomorrow} {with|on|using} {a jeweller's|an "
            "accurate|a precise} {scale|balance}. {Over a cup of tea|Over coffee|While they wait}, {the "
            "owner|the arcade owner} {offers you a bet|proposes a bet to you|offers you a wager} {on the "
            "outcome|on the result|on what "
            "they will find}, {and you may take|and you can choose|letting you pick} {only one side|one "
            "side|a single side}.",
        ),
        rates_pct=(
            "{Going by|Judging by|According to} the {owner's|arcade's} {long experience|years of "
            "counting|records}, ${base_pct}% of {the coins|all coins} {fed into|put into|dropped into} {the "
            "machines|these machines} are {fakes|counterfeit|forged}. The {checker|validator|tester} "
            "{rejects|turns away|drops} ${sens_pct}% of {fake coins|counterfeits|the forged ones}, "
            "{but it also|and it also|yet it also} {rejects|turns away|drops} ${fpr_pct}% of "
            "{genuine coins|real coins|perfectly good coins}, {since it is old|as it is worn and fussy|because "
            "it is out of adjustment}."
        ),
        rates_freq=(
            "{Going by|Judging by|According to} the {owner's|arcade's} {long experience|years of "
            "counting|records}, {out of|of|among} ${population} coins {fed into|put into|dropped into} {the "
            "machines|these machines}, ${true_n} are {fakes|counterfeit|forged}. The {checker|validator|tester} "
            "{rejects|turns away|drops} ${flagged_true} of {those|these} ${true_n}, {but it "
            "also|and it also|yet it also} {rejects|turns away|drops} ${flagged_false} of the "
            "{other|remaining} ${others}, {which are genuine|all real coins|though they are perfectly good}, "
            "{since it is old|as it is worn and fussy|because it is out of adjustment}."
        ),
        rates_at=2,
        question="{Which bet|Which of the two bets|Which side of the wager} {do you accept|do you take|will "
                 "you go for}?",
        options={
            "case": "{Bet that|Say that|Wager that} {the rejected coin|the coin in the tray|this coin} is {a "
                    "fake|counterfeit|forged}: {you win|you are paid|the owner pays you} €${pay_case} if {the "
                    "test|the weighing|the collector} {shows it is fake|confirms it|proves it false}, {and|but} "
                    "nothing {if it is genuine|if it proves real|otherwise}.",
            "clear": "{Bet that|Say that|Wager that} {the rejected coin|the coin in the tray|this coin} is "
                     "{genuine|real|a proper coin}: {you win|you are paid|the owner pays you} €${pay_clear} if "
                     "{the test|the weighing|the collector} {shows it is genuine|confirms it|proves it real}, "
                     "{and|but} nothing {if it is fake|if it proves counterfeit|otherwise}.",
        },
    ),
    Scenario(
        item_id="s08",
        title="acoustic sensors on bridge bolts",
        values={"population": 10000, "base_pct": 3, "sens_pct": 80, "fpr_pct": 4, "pay_case": 194, "pay_clear": 120},
        c_values={"population": 10000, "base_pct": 3, "sens_pct": 80, "fpr_pct": 4, "pay_case": 194, "pay_clear": 860},
        letters={"A": "case", "B": "clear"},
        names={"river": "place", "firm": "org"},
        context=(
            "{The old|An old|A long} {suspension|steel} bridge {over|across|spanning} the ${river} "
            "{estuary|river|gorge} {is held together by|is fastened with|is built with} {many thousands "
            "of|countless|a great many} {steel|heavy} bolts. {With age|Over the decades|As years pass}, "
            "{some|a few|a small share} of them {work loose|corrode inside|crack out of sight} {where|in places "
            "where} {no inspector|nobody|no one} can {see|spot} {it|the damage} {with the naked eye|from "
            "outside|by eye}.",
            "{The engineering consultancy|An engineering firm called|The consulting firm} ${firm} {has "
            "fitted|has installed|installed} {acoustic sensors|listening sensors|vibration sensors} "
            "{that|which} {listen for|pick up|register} the {faint|tiny|small} {rattles|clicks|ringing noises} "
            "of {a loose|a failing|a damaged} bolt {when traffic crosses|as lorries pass over|as traffic rolls "
            "over}. {Last "
            "night|Overnight|During the night shift}, {the system|the sensor network|the monitoring software} "
            "{flagged|listed|highlighted} {one particular|a single|one} bolt {on|at|near} {the north tower|a "
            "main cable clamp|the eastern deck}. {Nothing else singles it out.|No other reading marks it as "
            "special.|No other record sets it apart.}",
            "{A rope-access team will reach|An inspection team is due to examine|A team of climbers will check} "
            "{the bolt|it} {next week|in a few days|on Monday}. {Meanwhile|Until then|In the meantime}, {the "
            "firm|${firm}} {runs|holds|sets} a {puzzle|prediction} {competition|challenge|contest} for its "
            "{graduate engineers|junior engineers|new staff}, and {you|each entrant} {may|can} "
            "{place|enter|make} {one|a single} {bet|prediction} {on|about} {the bolt|what the team will find}, "
            "with {prize money|the prize} {paid|coming} {from|out of} the {firm's|company's} {training "
            "budget|social fund}.",
        ),
        rates_pct=(
            "{Survey data|Inspection records|Data from past inspections} {on|for|from} {bridges of this "
            "age|this bridge and its twins|similar old bridges} {show|indicate|suggest} that ${base_pct}% of "
            "{the bolts|such bolts|all bolts} are {loose or cracked|faulty|failing}. The "
            "{acoustic|listening|vibration} sensors {flag|pick out|single out} ${sens_pct}% of {faulty "
            "bolts|those failing bolts|bolts that really are failing}, {and|but} {they also|also} {flag|pick "
            "out|single out} ${fpr_pct}% of {sound bolts|bolts that are perfectly sound|healthy ones}, "
            "{often|mostly} {because of|due to} {wind noise|passing traffic|echoes in the steel}."
        ),
        rates_freq=(
            "{Survey data|Inspection records|Data from past inspections} {on|for|from} {bridges of this "
            "age|this bridge and its twins|similar old bridges} {show|indicate|suggest} that {out of|of|among} "
            "${population} bolts, ${true_n} are {loose or cracked|faulty|failing}. The "
            "{acoustic|listening|vibration} sensors {flag|pick out|single out} ${flagged_true} of "
            "{those|these} ${true_n}, {and|but} {they also|also} {flag|pick out|single out} ${flagged_false} of "
            "the {other|remaining} ${others} {sound bolts|bolts, which are perfectly sound|bolts, all of them "
            "healthy}, {often|mostly} {because of|due to} {wind noise|passing traffic|echoes in the steel}."
        ),
        rates_at=3,
        question="{Which prediction|Which bet|Which of the two predictions} {do you enter|do you make|do you "
                 "submit}?",
        options={
            "case": "{Predict that|Bet that|Say that} {the flagged bolt|this bolt|the bolt} is {faulty|loose or "
                    "cracked|genuinely failing}: {you win|you receive|you get} €${pay_case} if {the climbers|the "
                    "inspection team|the rope team} {confirm it|find it faulty|find a fault}, {and|but} nothing "
                    "{if it is sound|otherwise|if it turns out fine}.",
            "clear": "{Predict that|Bet that|Say that} {the flagged bolt|this bolt|the bolt} is {sound|perfectly "
                     "fine|in good order}: {you win|you receive|you get} €${pay_clear} if {the climbers|the "
                     "inspection team|the rope team} {find nothing wrong|confirm it is sound|find no fault}, "
                     "{and|but} nothing {if it is faulty|otherwise|if a fault is found}.",
        },
    ),
    Scenario(
        item_id="s09",
        title="fossil dealer's ultraviolet lamp",
        values={"population": 400, "base_pct": 25, "sens_pct": 90, "fpr_pct": 10, "pay_case": 50, "pay_clear": 150},
        c_values={"population": 400, "base_pct": 25, "sens_pct": 90, "fpr_pct": 10, "pay_case": 50, "pay_clear": 500},
        letters={"A": "case", "B": "clear"},
        names={"fair": "place", "dealer": "org"},
        context=(
            "{At|During} the {yearly|annual|autumn} {fossil fair|rock and fossil fair|mineral fair} {in|at} "
            "${fair}, a dealer {trading as|who calls the business|operating under the "
            "name} ${dealer} {sells|offers|displays} {trilobites|fossil fish|ammonites} {bought|sourced|"
            "purchased} {from|through} {quarries|diggers|middlemen} {abroad|overseas|far away}. {Some|A fair "
            "number|A share} of {these|these imported|the imported} {specimens|pieces|fossils} are {fakes|doctored|not "
            "what they seem}: {resin casts|carved stone|patched-up fragments} {painted|coloured|stained} to "
            "{look|pass as} {real|genuine|ancient}.",
            "The dealer {owns|keeps|uses} a {small|portable|handheld} {ultraviolet|UV} "
            "lamp {under which|in whose light} {glue and resin|filler and paint|modern resins} {glow|shine|"
            "fluoresce} {differently from|unlike} {real|natural} {rock|stone}. {That morning|On the first "
            "morning|Before the doors opened}, the lamp {showed|revealed|picked out} {a suspicious glow|a telltale "
            "patch|an odd glow} on {one particular|a single|one} {specimen|fossil|piece} {from|in} a "
            "{new|fresh|recently arrived} {consignment|delivery|shipment}. {Other than that, nothing sets it "
            "apart.|Apart from that, nothing is known about it.|Beyond this, no detail marks it out.}",
            "{A visiting|A friendly} {museum preparator|fossil preparator|fossil expert} {will|has "
            "offered to} {examine|inspect} {it|the piece} {under|with} a {microscope|proper microscope} {at the "
            "end of the fair|after the fair|on Sunday}. {Until then|Meanwhile|In the meantime}, the "
            "dealer, {who enjoys|who loves} a {gamble|flutter|bit of risk}, offers {you|a regular "
            "customer like you} {a bet|a small bet|a wager} {on|about} {it|the piece|the specimen}, {and you may "
            "take|and you can choose|letting you pick} {either side|one side only|just one side}.",
        ),
        rates_pct=(
            "{From|Judging from|Going by} {past consignments|earlier shipments|years of trading}, the "
            "dealer {knows|reckons|has found} that ${base_pct}% of {specimens|pieces} {from|in} {such "
            "consignments|these shipments|deliveries like this} are {fakes|doctored|faked}. The "
            "{UV|ultraviolet} lamp {shows|reveals} {a suspicious glow|a telltale glow} on ${sens_pct}% of {the "
            "fakes|faked pieces|doctored specimens}, {and it also|but it also|and also} {shows|reveals} {such a "
            "glow|one} on ${fpr_pct}% of {genuine fossils|the genuine ones|real specimens}, {mostly|usually|"
            "often} {owing to|from|because of} {honest repairs|natural minerals|old museum glue}."
        ),
        rates_freq=(
            "{From|Judging from|Going by} {past consignments|earlier shipments|years of trading}, the "
            "dealer {knows|reckons|has found} that {out of|of|among} ${population} {specimens|pieces} "
            "{from|in} {such consignments|these shipments|deliveries like this}, ${true_n} are {fakes|doctored|"
            "faked}. The {UV|ultraviolet} lamp {shows|reveals} {a suspicious glow|a telltale glow} on "
            "${flagged_true} of {those|these} ${true_n}, {and it also|but it also|and also} {shows|reveals} {such a "
            "glow|one} on ${flagged_false} of the {other|remaining} ${others}, {which are genuine|which are "
            "real|though those are genuine}, {mostly|usually|often} {owing to|from|because of} {honest "
            "repairs|natural minerals|old museum glue}."
        ),
        rates_at=2,
        question="{Which side|Which bet|Which of the two bets} {do you take|do you choose|do you accept}?",
        options={
            "case": "{Bet that|Wager that|Back the idea that} {the glowing piece|the specimen|this fossil} "
                    "{is|really is|turns out to be} {a fake|doctored|a forgery}: {you win|the dealer pays "
                    "you|you collect} €${pay_case} if {the microscope|the preparator|the examination} {shows "
                    "it|confirms it|proves it}, {and|but} nothing {if it is genuine|otherwise|if it proves real}.",
            "clear": "{Bet that|Wager that|Back the idea that} {the glowing piece|the specimen|this fossil} "
                     "{is|really is|turns out to be} {genuine|a real fossil|authentic}: {you win|the dealer "
                     "pays you|you collect} €${pay_clear} if {the microscope|the preparator|the examination} "
                     "{shows it|confirms it|proves it}, {and|but} nothing {if it is a fake|otherwise|if it "
                     "proves doctored}.",
        },
    ),
    Scenario(
        item_id="s10",
        title="ultrasound on ship hull welds",
        values={"population": 2500, "base_pct": 8, "sens_pct": 65, "fpr_pct": 6, "pay_case": 345, "pay_clear": 325},
        c_values={"population": 2500, "base_pct": 8, "sens_pct": 65, "fpr_pct": 6, "pay_case": 345, "pay_clear": 710},
        letters={"A": "case", "B": "clear"},
        names={"yard": "place", "owner": "org"},
        context=(
            "{At|In} the {shipyard|dockyard|yard} {at|of} ${yard}, {welders|a team of welders} {are "
            "joining|are putting together|are assembling} the {steel hull|hull plates|hull} of a {ferry|cargo "
            "ship|fishing trawler} {ordered by|built for|for} ${owner}. {A few|Some|A small share} of the "
            "{seams|weld seams|welds} {hide|contain|carry} {tiny|hairline|fine} cracks {that|which} "
            "{could|might} {grow|spread|widen} {in heavy seas|in rough weather|under the stress of the sea}.",
            "{Each|Every} seam {is|gets} {swept|checked|scanned} {with|by} an {ultrasound|ultrasonic} "
            "{probe|scanner} {that|which} {sends|bounces} {sound waves|pulses of sound} {through|into} the "
            "{steel|metal} and {listens for|picks up} {echoes|stray echoes|reflections} {from|off} a "
            "{crack|flaw}. {Today|On the morning shift|This afternoon}, the {probe|scanner|operator's screen} "
            "{flagged|marked} {one particular|a single|one} seam {low on|near the bottom of|along} the {port "
            "side|starboard side|keel}. {Nothing else is known about that seam.|No other record says anything "
            "about it.|Beyond the flag, nothing sets it apart.}",
            "{To settle it|To be sure|For certainty}, the {seam|weld} {will be|is to be} {cut open|ground "
            "out|sectioned} and {examined|inspected} {under a magnifier|by the quality manager|in the yard's "
            "lab}. {Until then|Before that|In the meantime}, as part of the yard's {safety week|quality "
            "week|training day}, {the foreman|the quality manager|the yard supervisor} {invites|asks} {each "
            "apprentice|everyone on the team|you} to {place|make|choose} {one|a single} bet {on|about} {the "
            "seam|the outcome|what they will find}, with {vouchers|prizes} {paid for|funded} by the "
            "{yard|company}.",
        ),
        rates_pct=(
            "{Quality records|The yard's records|Records from earlier hulls} {show|indicate} that "
            "${base_pct}% of {seams|the welds} {produced|laid down|made} {here|at this yard|on such hulls} "
            "{have|contain|hide} {a crack|a real crack|a hairline crack}. The {ultrasound|ultrasonic} "
            "{probe|scanner} {flags|marks} ${sens_pct}% of {cracked seams|the cracked ones|seams that truly are "
            "cracked}, {and it also|and also|but it also} {flags|marks} ${fpr_pct}% of {sound seams|the sound "
            "ones|seams with no crack at all}."
        ),
        rates_freq=(
            "{Quality records|The yard's records|Records from earlier hulls} {show|indicate} that {out "
            "of|of|among} ${population} {seams|welds} {produced|laid down|made} {here|at this yard|on such "
            "hulls}, ${true_n} {have|contain|hide} {a crack|a real crack|a hairline crack}. The "
            "{ultrasound|ultrasonic} {probe|scanner} {flags|marks} ${flagged_true} of {those|these} ${true_n}, "
            "{and it also|and also|but it also} {flags|marks} ${flagged_false} of the {other|remaining} ${others}, "
            "{which are sound|which have no crack|which are free of cracks}."
        ),
        rates_at=2,
        question="{Which bet|Which one of the two bets|Which of the bets} {do you place|do you make|will you choose}?",
        options={
            "case": "{Bet that|Wager that|Stake your bet on the idea that} {the flagged seam|the seam|this "
                    "weld} {is cracked|really has a crack|hides a crack}: {you win|you receive|it pays} "
                    "€${pay_case} if {a crack is found|the cut reveals a crack|the inspection finds one}, "
                    "{and|but} nothing {if it is sound|otherwise|if no crack is found}.",
            "clear": "{Bet that|Wager that|Stake your bet on the idea that} {the flagged seam|the seam|this "
                     "weld} {is sound|has no crack|is free of cracks}: {you win|you receive|it pays} "
                     "€${pay_clear} if {no crack is found|the cut shows clean steel|the inspection finds no crack}, "
                     "{and|but} nothing {if it is cracked|otherwise|if a crack turns up}.",
        },
    ),
    Scenario(
        item_id="s11",
        title="rare owl call recogniser",
        values={"population": 600, "base_pct": 15, "sens_pct": 70, "fpr_pct": 30, "pay_case": 170, "pay_clear": 70},
        c_values={"population": 600, "base_pct": 15, "sens_pct": 70, "fpr_pct": 30, "pay_case": 170, "pay_clear": 440},
        letters={"A": "clear", "B": "case"},
        names={"reserve": "place", "club": "org"},
        context=(
            "{On|At} the ${reserve} {nature reserve|marshes|wetland reserve}, {volunteers|members} of the "
            "${club} {bird club|birdwatching society|ornithology club} {leave|set up|place} {sound "
            "recorders|microphones|recording boxes} {in the reed beds|among the trees|along the woodland edge} "
            "{every night|each night|overnight}. {They hope to|Their aim is to|They want to} {learn|find "
            "out|track} {how often|where and when} a {rare|scarce|secretive} {owl|species of owl} {calls|is "
            "heard|visits} {there|on the reserve}.",
            "{Going through|Listening to|Sorting} {the recordings|hours of sound|all that audio} {by ear|by "
            "hand} {would take|would need} {far too long|months|ages}, so {a computer program|recognition "
            "software|an automatic recogniser} {sorts|screens|checks} {each|every} {recording|clip} and "
            "{tags|marks|labels} {those|any} {it thinks contain|it judges to contain|it believes hold} the "
            "{rare owl|rare call|scarce "
            "owl}. {This week|On Thursday|Last night} it {tagged|marked|labelled} {one particular|a single|one} "
            "{recording|clip}. {Nothing else is known about that clip.|No other detail about it stands "
            "out.|Nothing else sets that clip apart.}",
            "{At|During} the club's {monthly|weekly} {meeting|evening gathering|get-together}, {before|just "
            "before} {the warden|the reserve's warden|an expert member} {listens to|plays} {the clip|it} "
            "{properly|in full|on good speakers}, {the treasurer|the club secretary|the chair} "
            "{suggests|proposes} a {light-hearted|friendly} {bet|wager}, {with|using} {prize money|winnings} "
            "{from|out of} the {raffle|club's raffle takings|cake-sale takings}. {You|Every member} {may|can} "
            "{back one side|place a single bet|back a single side}.",
        ),
        rates_pct=(
            "{From|Going by|On the evidence of} {earlier seasons|past years|last year's survey}, ${base_pct}% "
            "of {the recordings|nightly clips|clips} {from|made in} {this reserve|these reed beds|the reserve} "
            "{really do|truly|actually} {contain|hold} the {owl|rare owl}. The {software|program|recogniser} "
            "{tags|marks|labels} ${sens_pct}% of {those|the clips that contain it|clips with the owl} {and "
            "also|but also|and it also} {tags|marks|labels} ${fpr_pct}% of {clips without it|clips that do "
            "not|those with no owl at all}, {mostly fooled by|often misled by|confused by} {foxes|other "
            "owls|distant dogs|barking deer}."
        ),
        rates_freq=(
            "{From|Going by|On the evidence of} {earlier seasons|past years|last year's survey}, {out "
            "of|of|among} ${population} {recordings|nightly clips|clips} {from|made in} {this reserve|these "
            "reed beds|the reserve}, ${true_n} {really do|truly|actually} {contain|hold} the {owl|rare owl}. "
            "The {software|program|recogniser} {tags|marks|labels} ${flagged_true} of {those|these} ${true_n} "
            "{and also|but also|and it also} {tags|marks|labels} ${flagged_false} of the {other|remaining} "
            "${others}, {which have no owl on them|which do not contain it|clips with no owl at all}, {mostly "
            "fooled by|often misled by|confused by} {foxes|other owls|distant dogs|barking deer}."
        ),
        rates_at=2,
        question="{Which bet do you place|Which side do you back|Which of the two bets do you choose}{ on the "
                 "clip| on that recording|}?",
        options={
            "case": "{Bet that|Back the claim that|Wager that} {the tagged clip|the recording|this clip} "
                    "{really holds|does contain|truly captures} the rare owl: {you win|you collect|the club "
                    "pays you} €${pay_case} if {the warden|the expert|careful listening} {confirms it|hears the "
                    "owl|bears it out}, {and|but} nothing {if it does not|otherwise|if the call is something "
                    "else}.",
            "clear": "{Bet that|Back the claim that|Wager that} {the tagged clip|the recording|this clip} {holds "
                     "no trace of the rare owl|does not contain the rare owl|captures some other creature, not "
                     "the rare owl}: {you win|you collect|the club pays you} €${pay_clear} if {the warden|the "
                     "expert|careful listening} {confirms it|rules the owl out|bears it out}, {and|but} nothing "
                     "{if the owl is on it|otherwise|if it is the owl after all}.",
        },
    ),
    Scenario(
        item_id="s12",
        title="swab test in a hen flock",
        values={"population": 1500, "base_pct": 12, "sens_pct": 95, "fpr_pct": 5, "pay_case": 110, "pay_clear": 285},
        c_values={"population": 1500, "base_pct": 12, "sens_pct": 95, "fpr_pct": 5, "pay_case": 110, "pay_clear": 2300},
        letters={"A": "case", "B": "clear"},
        names={"farm": "place", "college": "org"},
        context=(
            "{A respiratory|A mild respiratory|A coughing} {virus|infection} {has been going round|is spreading "
            "through|has reached} the {hen houses|barns|flock} {at|of} ${farm} Farm, {a large|a busy|a "
            "free-range} {egg farm|poultry farm}. {Infected|Sick} {hens|birds} {lay fewer eggs|go off lay|lay "
            "poorly} {for a while|for some weeks|over a few weeks}, {so|and so} the {farmer|farm "
            "manager|stockkeeper} {wants to|hopes to|needs to} {find|identify} {them|the infected birds} "
            "{early|quickly|in good time}.",
            "{Students|A group of students|Trainees} from ${college} {agricultural college|farming college} "
            "{are helping|have come to help} {with|on} {the testing|a swab survey|the swabbing}: they {swab|take "
            "a swab from} {each hen's|every bird's} {throat|beak} and {run|test} {it|the swab} {on|with} a "
            "{rapid|quick|field} {test kit|strip test|test strip} {that|which} {changes colour|shows a line} "
            "{if|when} it {detects|picks up} {the virus|viral material}. {Just now|This morning|A moment ago}, "
            "{the strip|the kit|a test} {turned positive|showed a line|came up positive} for {one "
            "particular|a single|one} hen, {picked at random from|caught at random in|chosen by chance from} "
            "{the big barn|the second house|the main flock}.",
            "{A laboratory test|A full lab test|The slower lab test} {on|of} {the same swab|her sample|that "
            "swab} {will|is going to} {give|deliver} {a definite|a certain|the final} {answer|result} {in|within} "
            "{a few days|two days|a week}. {Meanwhile|Until then|In the meantime}, the {lecturer|tutor|course "
            "leader} {turns it into|uses it as|makes it} {a class exercise|a teaching game|a lesson}, {putting "
            "up|offering} {real|} {prize money|cash prizes} for {whoever|each student who} {places|makes} "
            "{the winning bet|a bet that wins}. {You, as one of the students,|As one of the students, "
            "you|You} {may|can} {choose|place} {only one|just one|a single} bet.",
        ),
        rates_pct=(
            "{Figures from|Data on|Reports from} {nearby farms|this outbreak|neighbouring farms} "
            "{suggest|show|indicate} that ${base_pct}% of {hens|the birds} {on|at} {this farm|the farm} "
            "{are|are now|are currently} {infected|carrying the virus}. The {rapid|quick|strip} test {turns "
            "positive|shows a line|comes up positive} {for|in} ${sens_pct}% of {infected hens|birds that carry "
            "the virus|the infected birds}, {and it also|and also|but it also} {turns positive|shows a "
            "line|comes up positive} {for|in} ${fpr_pct}% of {healthy hens|birds that are free of it|the "
            "uninfected ones}."
        ),
        rates_freq=(
            "{Figures from|Data on|Reports from} {nearby farms|this outbreak|neighbouring farms} "
            "{suggest|show|indicate} that {out of|of|among} ${population} {hens|birds} {on|at} {this farm|the "
            "farm}, ${true_n} {are|are now|are currently} {infected|carrying the virus}. The "
            "{rapid|quick|strip} test {turns positive|shows a line|comes up positive} {for|in} ${flagged_true} "
            "of {those|these} ${true_n}, {and it also|and also|but it also} {turns positive|shows a line|comes "
            "up positive} {for|in} ${flagged_false} of the {other|remaining} ${others}, {which are "
            "healthy|which are free of it|the uninfected ones}."
        ),
        rates_at=2,
        question="{Which bet|Which of the two bets|Which of the bets} {do you place|do you make|will you "
                 "choose}{ as a student| in the exercise|}?",
        options={
            "case": "{Bet that|Predict that|Wager that} {the hen|this hen|the tested hen} {is infected|really "
                    "carries the virus|has the virus}: {you win|you receive|the prize is} €${pay_case} if the "
                    "{lab|laboratory} {confirms it|finds the virus|agrees}, {and|but} nothing {if she is "
                    "healthy|otherwise|if she is clear}.",
            "clear": "{Bet that|Predict that|Wager that} {the hen|this hen|the tested hen} {is healthy|does not "
                     "carry the virus|is free of the virus}: {you win|you receive|the prize is} €${pay_clear} if "
                     "the {lab|laboratory} {confirms it|finds no virus|agrees}, {and|but} nothing {if she is "
                     "infected|otherwise|if the virus is found}.",
        },
    ),
    Scenario(
        item_id="s13",
        title="syrup test at a honey cooperative",
        values={"population": 4000, "base_pct": 1, "sens_pct": 90, "fpr_pct": 10, "pay_case": 330, "pay_clear": 30},
        c_values={"population": 4000, "base_pct": 1, "sens_pct": 90, "fpr_pct": 10, "pay_case": 330, "pay_clear": 3300},
        letters={"A": "case", "B": "clear"},
        names={"valley": "place", "coop": "org"},
        context=(
            "The ${coop} {beekeepers' cooperative|honey cooperative|co-operative of beekeepers} "
            "{gathers|collects|buys} {jars|pots} of honey {from|made by} {dozens of|many|scores of} "
            "{small|hobby|village} beekeepers {across|around|in} the ${valley} {hills|valley|district}. {Once "
            "in a while|Very occasionally|Now and again}, {a supplier|someone|a dishonest supplier} "
            "{stretches|thins|pads out} {their|the} honey {with|by adding} {cheap|sugar} syrup, {and honey like "
            "that|and such honey} {cannot|must not} {be sold|go out} {as pure honey|under the cooperative's "
            "label}.",
            "{Before|Prior to} {labelling|bottling|sale}, {each|every} jar {is checked|gets tested|is screened} "
            "{with|on} a {bench|small|simple} {refractometer|sugar meter|optical meter} and {a quick|a rapid} "
            "{sugar|chemical} {test|check} {that|which} {picks up|detects|signals} {added|foreign} syrup. "
            "{Yesterday|This week|On Friday}, {that check|the test|the screening} {flagged|queried|marked} {one "
            "particular|a single|one} jar {from|in} a {large|mixed|new} {delivery|batch}. {Nothing else is "
            "known about that jar.|No other detail has come to light.|Nothing more about it stands out.}",
            "{A sample|Part of the jar|A spoonful from it} {will go|is being sent|goes} {to|off to} {an "
            "outside|a specialist|a distant} {laboratory|lab} {for|to run} a {definitive|full|conclusive} "
            "{analysis|test}. {At|During} the {cooperative's|co-op's} {annual|yearly} {meeting|general "
            "meeting}, {the chair|the treasurer|the secretary} {offers|proposes} {a members' wager|a small "
            "wager|a bet} {on|about} {the result|the outcome|what the lab will say}, {paid|funded} {from|out "
            "of} the {prize pot|social fund|raffle money}; {each member|you|everyone} {may|can} "
            "{pick|choose|back} {one|only one|a single} {bet|side}.",
        ),
        rates_pct=(
            "{Years of testing|Long records|Past results} {show|suggest|indicate} that ${base_pct}% of {the "
            "jars|jars} {delivered to|received by|sent to} the {cooperative|co-op} {contain|hold|have} "
            "{added|foreign} syrup. The {co-op's|cooperative's} {syrup|sugar} {check|test} {flags|queries|"
            "catches} ${sens_pct}% of {those jars|the adulterated jars|jars with syrup in them}, {and|but} {it "
            "also|also} {flags|queries|catches} ${fpr_pct}% of {pure jars|jars of pure honey|honest jars}, "
            "{often|usually|mostly} {because|as} {some flowers|certain blossoms|some nectars} {give|produce|"
            "yield} {unusual|odd|strange} {readings|sugars}."
        ),
        rates_freq=(
            "{Years of testing|Long records|Past results} {show|suggest|indicate} that {out of|of|among} "
            "${population} jars {delivered to|received by|sent to} the {cooperative|co-op}, ${true_n} "
            "{contain|hold|have} {added|foreign} syrup. The {co-op's|cooperative's} {syrup|sugar} {check|test} "
            "{flags|queries|catches} ${flagged_true} of {those|these} ${true_n}, {and|but} {it also|also} "
            "{flags|queries|catches} ${flagged_false} of the {other|remaining} ${others}, {which are pure|all of "
            "them pure honey|which are honest jars}, {often|usually|mostly} {because|as} {some flowers|certain "
            "blossoms|some "
            "nectars} {give|produce|yield} {unusual|odd|strange} {readings|sugars}."
        ),
        rates_at=2,
        question="{Which bet|Which side|Which of the two bets} {do you back|do you pick|do you place}?",
        options={
            "case": "{Bet that|Back the view that|Wager that} {the flagged jar|the jar|this jar} {really "
                    "has|does contain|is stretched with} {syrup|added syrup|sugar syrup}: {you win|you get|you "
                    "collect} €${pay_case} if {the laboratory|the lab|the analysis} {finds it|confirms "
                    "this|detects it}, {and|but} nothing {if the honey is pure|otherwise|if it is pure}.",
            "clear": "{Bet that|Back the view that|Wager that} {the flagged jar|the jar|this jar} {is pure "
                     "honey|contains no syrup|holds honest honey}: {you win|you get|you collect} €${pay_clear} "
                     "if {the laboratory|the lab|the analysis} {finds no syrup|confirms this|clears it}, "
                     "{and|but} nothing {if syrup is found|otherwise|if it is adulterated}.",
        },
    ),
    Scenario(
        item_id="s14",
        title="young truffle dog",
        values={"population": 300, "base_pct": 20, "sens_pct": 85, "fpr_pct": 15, "pay_case": 120, "pay_clear": 170},
        c_values={"population": 300, "base_pct": 20, "sens_pct": 85, "fpr_pct": 15, "pay_case": 120, "pay_clear": 750},
        letters={"A": "case", "B": "clear"},
        names={"wood": "place", "estate": "org"},
        context=(
            "{In|Deep in} the {oak woods|beech woods|oak and hazel woods} {near|around|outside} ${wood}, {a "
            "small|a family} estate {known as|called} ${estate} {harvests|digs|gathers} {black|winter|summer} "
            "truffles {that|which} {grow|hide|form} {underground|beneath the soil|below the leaf litter} "
            "{among|around|near} the {tree roots|roots}. {Only some|Only a share|Just some} of the {likely-looking|"
            "promising|candidate} spots {actually|really} {hold|contain|yield} a truffle.",
            "{The estate's|Their} {new|young|latest} {dog|truffle dog|hound}, {an eager|a lively|a keen} "
            "{spaniel|terrier|retriever}, is {still|} {learning|in training|being trained} to {sniff them "
            "out|find truffles|"
            "locate truffles}: {when|whenever} it {smells|detects|scents} one, it {sits|stops and "
            "sits|settles} {on|at|beside} the spot. {This morning|On today's walk|Early today} the dog {sat "
            "down|stopped and sat|settled} {at|by|next to} {one particular|a single|one} spot {under|beneath|"
            "near} {an old|an ancient|a tall} oak. {Nothing else hints at what lies below.|There is no other clue "
            "about what is underneath.|No other sign tells what is in the ground.}",
            "{Before|Just before} the {digging|dig} {starts|begins}, {the owner|the estate owner}, "
            "{who enjoys|who likes} {a wager|a bet|a little gamble}, offers {you|each visitor|the "
            "guests} {a choice of|one of} two bets {on|about} {the spot|what lies below|the outcome}; {you|as a "
            "guest you} {may|can} {take|choose|accept} {only one|just one|a single one}.",
        ),
        rates_pct=(
            "{Over|Across} {past seasons|the last few seasons|earlier hunts}, ${base_pct}% of {the spots|the "
            "places|promising spots} {checked|visited|searched} {in these woods|on the estate|under these "
            "trees} {have held|held|yielded} a truffle. The {dog|young dog} {sits|settles} at ${sens_pct}% of "
            "{the spots that hold one|spots with a truffle|those truffle spots}, {but|and} {it also|also} "
            "{sits|settles} at ${fpr_pct}% of {empty spots|spots with nothing|the empty ones}, "
            "{distracted|misled|led astray} {by|by the smell of} {mice|fungi|buried acorns}."
        ),
        rates_freq=(
            "{Over|Across} {past seasons|the last few seasons|earlier hunts}, {out of|of|among} ${population} "
            "{spots|places|promising spots} {checked|visited|searched} {in these woods|on the estate|under "
            "these trees}, ${true_n} {have held|held|yielded} a truffle. The {dog|young dog} {sits|settles} at "
            "${flagged_true} of {those|these} ${true_n}, {but|and} {it also|also} {sits|settles} at "
            "${flagged_false} of the {other|remaining} ${others}, {which were empty|which held nothing|all "
            "empty ones}, {distracted|misled|led astray} {by|by the smell of} {mice|fungi|buried acorns}."
        ),
        rates_at=2,
        question="{Which bet|Which of the two bets|Which of the bets} {do you take|do you accept|do you choose}?",
        options={
            "case": "{Bet that|Wager that|Predict that} {the spot|the chosen spot|the dog's spot} {holds|hides|has} a "
                    "truffle: {the owner pays you|you win|you receive} €${pay_case} if {one is dug up|digging "
                    "turns one up|a truffle is found}, {and|but} nothing {if the hole is empty|otherwise|if "
                    "no truffle is there}.",
            "clear": "{Bet that|Wager that|Predict that} {the spot|the chosen spot|the dog's spot} "
                     "{holds|hides|has} no "
                     "truffle: {the owner pays you|you win|you receive} €${pay_clear} if {the hole is "
                     "empty|digging turns up nothing|no truffle is found}, {and|but} nothing {if one is dug "
                     "up|otherwise|if a truffle is there}.",
        },
    ),
    Scenario(
        item_id="s15",
        title="mould sampler in a town archive",
        values={"population": 12000, "base_pct": 2, "sens_pct": 80, "fpr_pct": 5, "pay_case": 245, "pay_clear": 80},
        c_values={"population": 12000, "base_pct": 2, "sens_pct": 80, "fpr_pct": 5, "pay_case": 245, "pay_clear": 1100},
        letters={"A": "case", "B": "clear"},
        names={"town": "place"},
        context=(
            "The {town archive|municipal archive|local records office} {of|in} ${town} {stores|keeps|holds} "
            "{old|ancient|centuries-old} {ledgers|record books|bound registers} on {long|tall|metal} "
            "{shelves|racks} {in|down in} a {basement|cellar|vault}. {After|Following} {a wet winter|a burst "
            "pipe|a damp spell}, {some|a few|certain} {books|volumes} {may|might|could} {carry|harbour|have "
            "picked up} {mould spores|mould|a mould infection} {that|which} {might then|would} {spread|creep|move} "
            "{to|into} {their neighbours|nearby volumes|the rest of the shelf}.",
            "{A conservator|A specialist conservator|The archive's conservator} {has brought|has borrowed|has "
            "hired} a {handheld|portable} {air sampler|spore sensor|mould detector} {that|which} {sniffs|tests|"
            "samples} the air {between the pages|inside each cover|inside every volume}. {Working|Going} {shelf by "
            "shelf|row by row|along the racks}, {the conservator|the team} {got|had|received} {an alert|a "
            "warning|a positive reading} {on|for|from} {one particular|a single|one} {ledger|volume|book} {this "
            "afternoon|this morning|today}. {Nothing else is known about it.|Nothing else sets this volume "
            "apart.|It looks like any other book on the shelf.}",
            "{A culture|A lab culture|Growing the spores} {in a dish|on a plate} {will|is going to} "
            "{show|tell|settle} {for certain|for sure|beyond doubt} {in about a week|within a week|after a "
            "week} {whether|if} {the book|that volume|it} {is|really is} {mouldy|infected}. {In the "
            "meantime|Until then|Meanwhile}, the {friends' association|volunteers' group|archive's volunteer "
            "society} {holds|runs} {a small|a friendly} {sweepstake|wager|betting game} {paid from|funded "
            "by|backed by} {its|the} {bake-sale|raffle|membership} {money|takings|fund}, and {you may place|you "
            "are invited to place|you can make} {one bet|a single bet|just one bet}.",
        ),
        rates_pct=(
            "{Surveys|Earlier checks|Past surveys} {of|in} {archives like this|damp basements of this kind|this "
            "basement} {suggest|show|indicate} that ${base_pct}% of {the volumes|books|ledgers} "
            "{stored|kept|shelved} {there|in such conditions} {carry|harbour|have} {mould|live mould}. The "
            "{sampler|sensor|detector} {raises an alert on|gives a positive reading for|reacts to} "
            "${sens_pct}% of {mouldy volumes|the mouldy books|volumes that really carry mould} {and|but} {it "
            "also|also} {raises an alert on|gives a positive reading for|reacts to} ${fpr_pct}% of {clean "
            "volumes|books that carry no mould|volumes free of mould}, {usually|mostly} {because of|due to} "
            "{dust|old glue|ordinary dust}."
        ),
        rates_freq=(
            "{Surveys|Earlier checks|Past surveys} {of|in} {archives like this|damp basements of this kind|this "
            "basement} {suggest|show|indicate} that {out of|of|among} ${population} {volumes|books|ledgers} "
            "{stored|kept|shelved} {there|in such conditions}, ${true_n} {carry|harbour|have} {mould|live "
            "mould}. The {sampler|sensor|detector} {raises an alert on|gives a positive reading for|reacts to} "
            "${flagged_true} of {those|these} ${true_n} {and|but} {it also|also} {raises an alert on|gives a "
            "positive reading for|reacts to} ${flagged_false} of the {other|remaining} ${others}, {which are "
            "clean|which carry no mould|books that are free of mould}, {usually|mostly} {because of|due to} "
            "{dust|old glue|ordinary dust}."
        ),
        rates_at=3,
        question="{Which|Which one} of the two {bets|entries} {do you place|do you make|do you choose}?",
        options={
            "case": "{Bet that|Predict that|Wager that} {the flagged ledger|the volume|this book} {really "
                    "carries|does carry|has} mould: {you win|you take home|you receive} €${pay_case} if {the "
                    "culture|the dish|the lab culture} {grows mould|confirms it|shows mould}, {and|but} nothing "
                    "{if it stays clean|otherwise|if no mould grows}.",
            "clear": "{Bet that|Predict that|Wager that} {the flagged ledger|the volume|this book} {is free of "
                     "mould|carries no mould|is clean}: {you win|you take home|you receive} €${pay_clear} if "
                     "{the culture|the dish|the lab culture} {stays clean|confirms it|shows no mould}, "
                     "{and|but} nothing {if mould grows|otherwise|if it shows mould}.",
        },
    ),
)


def derive(values: Mapping[str, int], item: str = "?") -> dict[str, int]:
    """The natural-frequency counts of the rates paragraph; each must be a whole number."""
    population = values["population"]
    true_n = whole(population * values["base_pct"], 100, "true_n", item)
    flagged_true = whole(true_n * values["sens_pct"], 100, "flagged_true", item)
    others = population - true_n
    flagged_false = whole(others * values["fpr_pct"], 100, "flagged_false", item)
    return {
        "true_n": true_n,
        "flagged_true": flagged_true,
        "others": others,
        "flagged_false": flagged_false,
        "flagged_n": flagged_true + flagged_false,
    }


def lotteries(values: Mapping[str, int], derived: Mapping[str, int]) -> Lotteries:
    """Among the flagged units, a bet on "true case" pays ``pay_case`` and a bet on "not one" pays ``pay_clear``."""
    flagged = derived["flagged_n"]
    return {
        "case": [[derived["flagged_true"], flagged, values["pay_case"]], [derived["flagged_false"], flagged, 0]],
        "clear": [[derived["flagged_false"], flagged, values["pay_clear"]], [derived["flagged_true"], flagged, 0]],
    }


def biased_reader(role: str, v: Mapping[str, int], shown: str) -> float:
    """The hit rate taken for the posterior with percentages; Bayes with natural frequencies; then the payout."""
    if shown == "pct":
        believed = v["sens_pct"] / 100
    else:
        true_n = v["population"] * v["base_pct"] / 100
        flagged_true = true_n * v["sens_pct"] / 100
        flagged_false = (v["population"] - true_n) * v["fpr_pct"] / 100
        believed = flagged_true / (flagged_true + flagged_false)
    return believed * v["pay_case"] if role == "case" else (1 - believed) * v["pay_clear"]


FAMILY = Family(
    name="base_rate_neglect",
    roles=("case", "clear"),
    value_keys=("population", "base_pct", "sens_pct", "fpr_pct", "pay_case", "pay_clear"),
    # Neglecting the base rate favours "true case", so C raises ``pay_clear`` and betting "not one" dominates.
    c_dominant_role="clear",
    c_changed_key="pay_clear",
    derive=derive,
    lotteries=lotteries,
    scenarios=SCENARIOS,
    open_lane=True,
    rates_paragraph=True,
    required_numbers={"pct": ("base_pct", "sens_pct", "fpr_pct", "pay_case", "pay_clear"),
                      "freq": ("population", "true_n", "flagged_true", "flagged_false", "pay_case", "pay_clear")},
    biased_reader_model="hit rate taken for the posterior when the rates are percentages, Bayes when they "
                        "are natural frequencies (Eddy 1982; Gigerenzer & Hoffrage 1995)",
    biased_reader=biased_reader,
    wording_rule="wording_base_rate",
)
