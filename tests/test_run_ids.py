"""Run ids (llmarchive/archive/run_ids.py): the exact bytes of each scheme, and each id read back.

Archives hold folders and ledger runs named by these ids, so the bytes each
scheme makes are pinned here as literals (typed out, never rebuilt with the
functions under test): a change to any of them strands every run already
made under the old name.  :func:`parse` is then checked on each scheme — the
parts it gives back, and the parts it leaves None where an id splits more
than one way (it must not guess).
"""
import hashlib

import pytest

from llmarchive.archive.paths import UnsafeId
from llmarchive.archive.run_ids import (RUN_ID_MAX, RunId, bridge_run_id, comparison_run_id, fingerprint_run_id,
                                        fingerprint_session, is_sweep_id, is_sweep_of, manual_run_id,
                                        open_weights_run_id, parse, retry_run_id, rotation_run_id, slug,
                                        sweep_run_id)

OPEN = "risky_choice_framing__wording__v0"
GUARD = "sunk_cost_fallacy__order__v0"
# A protocol id of the grammar whose family is one word: the only kind a trailing protocol can be told apart by.
ONE_WORD = "decoy__order__v2"


# --------------------------------------------------------------------------
# the bytes of each scheme
# --------------------------------------------------------------------------

def test_the_sweep_id_is_the_month_the_protocol_and_the_model_slug():
    assert sweep_run_id("2026-11-02", OPEN, "claude-sonnet-5") == \
        "sweep_2026-11_risky_choice_framing__wording__v0_claude-sonnet-5"
    # A day and its month name the same run: the sweep's run is the month's.
    assert sweep_run_id("2026-11", OPEN, "claude-sonnet-5") == sweep_run_id("2026-11-30", OPEN, "claude-sonnet-5")


def test_the_bridge_id_names_both_models_the_protocol_and_the_role():
    assert bridge_run_id("claude-sonnet-5", "claude sonnet/6", OPEN, "new") == \
        "bridge_claude-sonnet-5_to_claude-sonnet-6_risky_choice_framing__wording__v0_new"
    assert bridge_run_id("claude-sonnet-5", "claude-sonnet-6", GUARD, "old") == \
        "bridge_claude-sonnet-5_to_claude-sonnet-6_sunk_cost_fallacy__order__v0_old"


def test_the_manual_id_is_the_run_date_the_protocol_and_the_model_slug():
    assert manual_run_id("2026-11-03", OPEN, "Qwen/Qwen2.5 1.5B") == \
        "2026-11-03_risky_choice_framing__wording__v0_Qwen-Qwen2.5-1.5B"
    assert manual_run_id("2026-11-03", OPEN, "smollm2-135m") == \
        "2026-11-03_risky_choice_framing__wording__v0_smollm2-135m"


def test_the_comparison_id_has_no_date_so_a_rerun_on_any_day_resumes_it():
    assert comparison_run_id(OPEN, "org/my-model:latest", "openai") == \
        "comparison_risky_choice_framing__wording__v0_openai_org-my-model-latest"


def test_a_comparison_id_too_long_is_cut_to_the_limit_and_keeps_a_hash_of_the_whole_model_id():
    head = "comparison_risky_choice_framing__wording__v0_anthropic_"        # 55 characters
    model = "org/" + "m" * 300
    long_id = comparison_run_id(OPEN, model, "anthropic")
    # The hash is of the model id as given (with its "/"), not of its slug.
    assert hashlib.sha256(model.encode("utf-8")).hexdigest()[:12] == "c4be5989297a"
    assert long_id == head + "org-" + "m" * 128 + "-c4be5989297a"
    assert len(long_id) == RUN_ID_MAX == 200
    # Where the cut falls on a "-", the dash is dropped before the hash's own (199 characters then).
    cut_on_dash = comparison_run_id(OPEN, "a" * 131 + "-" + "b" * 100, "anthropic")
    assert cut_on_dash == head + "a" * 131 + "-8baf192c866d" and len(cut_on_dash) == 199
    # Two long ids that agree up to the cut never share a folder.
    assert comparison_run_id(OPEN, "org/" + "m" * 300 + "x", "anthropic") != long_id
    # One character short of the limit: no cut, no hash.
    fits = "n" * (RUN_ID_MAX - len(head))
    assert comparison_run_id(OPEN, fits, "anthropic") == head + fits
    assert comparison_run_id(OPEN, fits + "n", "anthropic") != head + fits + "n"


def test_a_retry_is_the_base_for_the_first_attempt_and_base_dash_k_after():
    assert retry_run_id("comparison_x_openai_m", 1) == "comparison_x_openai_m"
    assert retry_run_id("comparison_x_openai_m", 2) == "comparison_x_openai_m-2"
    assert retry_run_id("comparison_x_openai_m", 13) == "comparison_x_openai_m-13"


def test_the_open_weights_id_is_the_generation_and_the_protocol_and_refuses_an_escaping_generation():
    assert open_weights_run_id("smollm2-135m-q8", OPEN) == "ow_smollm2-135m-q8_risky_choice_framing__wording__v0"
    with pytest.raises(UnsafeId):
        open_weights_run_id("../elsewhere", OPEN)
    with pytest.raises(UnsafeId):
        open_weights_run_id("a/b", OPEN)


def test_the_rotation_id_is_the_day_and_the_guard_protocol():
    assert rotation_run_id("2026-11-04", GUARD) == "rotation_2026-11-04_sunk_cost_fallacy__order__v0"


def test_the_fingerprint_ledger_run_is_the_day_the_model_as_named_and_the_attempt():
    assert fingerprint_run_id("2026-11-05", "claude-sonnet-5", 2) == "subject_fingerprint_2026-11-05_claude-sonnet-5@2"
    assert fingerprint_run_id("2026-11-05", "claude-sonnet-5", "1") == \
        "subject_fingerprint_2026-11-05_claude-sonnet-5@1"


def test_a_slug_keeps_letters_digits_dots_underscores_and_dashes_and_is_never_empty():
    assert slug("org/my model:latest") == "org-my-model-latest"
    assert slug("a_b.c-d") == "a_b.c-d"
    assert slug("--.x.--") == "x"
    assert slug("///") == "model"


# --------------------------------------------------------------------------
# reading back
# --------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("sweep_2026-11_risky_choice_framing__wording__v0_claude-sonnet-5",
     RunId("sweep_2026-11_risky_choice_framing__wording__v0_claude-sonnet-5", "full_sweep", "2026-11", OPEN,
           "claude-sonnet-5")),
    # a model slug may hold underscores and end in -<k>: it stays the model's
    ("sweep_2026-11_risky_choice_framing__wording__v0_my_model-2",
     RunId("sweep_2026-11_risky_choice_framing__wording__v0_my_model-2", "full_sweep", "2026-11", OPEN, "my_model-2")),
    ("bridge_claude-sonnet-5_to_claude-sonnet-6_decoy__order__v2_old",
     RunId("bridge_claude-sonnet-5_to_claude-sonnet-6_decoy__order__v2_old", "bridge", None, ONE_WORD,
           "claude-sonnet-5", "claude-sonnet-6", "old")),
    ("2026-11-03_risky_choice_framing__wording__v0_Qwen-Qwen2.5-1.5B",
     RunId("2026-11-03_risky_choice_framing__wording__v0_Qwen-Qwen2.5-1.5B", "manual", "2026-11-03", OPEN,
           "Qwen-Qwen2.5-1.5B")),
    ("comparison_risky_choice_framing__wording__v0_openai_org-my-model-latest",
     RunId("comparison_risky_choice_framing__wording__v0_openai_org-my-model-latest", "comparison", None, OPEN,
           "org-my-model-latest", suffix="openai")),
    ("ow_smollm2-135m-q8_decoy__order__v2",
     RunId("ow_smollm2-135m-q8_decoy__order__v2", "open_weights_series", None, ONE_WORD, "smollm2-135m-q8")),
    ("rotation_2026-11-04_sunk_cost_fallacy__order__v0",
     RunId("rotation_2026-11-04_sunk_cost_fallacy__order__v0", "guard_margin_rotation", "2026-11-04", GUARD)),
    ("subject_fingerprint_2026-11-05_claude-sonnet-5@2",
     RunId("subject_fingerprint_2026-11-05_claude-sonnet-5@2", "subject_fingerprint", "2026-11-05", None,
           "claude-sonnet-5", suffix="2")),
    # the first ledgers' attempts carried no @n
    ("subject_fingerprint_2026-11-05_claude-sonnet-5",
     RunId("subject_fingerprint_2026-11-05_claude-sonnet-5", "subject_fingerprint", "2026-11-05", None,
           "claude-sonnet-5")),
    # a model named with an "@" of its own: only the last @<digits> is the attempt
    ("subject_fingerprint_2026-11-05_claude@x@3",
     RunId("subject_fingerprint_2026-11-05_claude@x@3", "subject_fingerprint", "2026-11-05", None, "claude@x",
           suffix="3")),
])
def test_parse_gives_back_every_part_an_id_holds_one_way_alone(text, expected):
    assert parse(text) == expected


def test_every_id_a_scheme_makes_reads_back_as_that_scheme_with_its_parts():
    made = {
        "full_sweep": parse(sweep_run_id("2026-11-02", OPEN, "org/model x")),
        "bridge": parse(bridge_run_id("old-m", "new-m", ONE_WORD, "new")),
        "manual": parse(manual_run_id("2026-11-03", GUARD, "smollm2-135m")),
        "comparison": parse(comparison_run_id(GUARD, "m:1", "anthropic")),
        "open_weights_series": parse(open_weights_run_id("gen-7", ONE_WORD)),
        "guard_margin_rotation": parse(rotation_run_id("2026-11-04", GUARD)),
        "subject_fingerprint": parse(fingerprint_run_id("2026-11-05", "claude-sonnet-5", 4)),
    }
    assert {job: found.job for job, found in made.items()} == {job: job for job in made}
    sweep, bridge, manual = made["full_sweep"], made["bridge"], made["manual"]
    assert (sweep.date, sweep.month, sweep.protocol_id, sweep.model) == ("2026-11", "2026-11", OPEN, "org-model-x")
    assert (bridge.model, bridge.new_model, bridge.protocol_id, bridge.suffix) == ("old-m", "new-m", ONE_WORD, "new")
    assert (manual.date, manual.month, manual.protocol_id, manual.model) == ("2026-11-03", "2026-11", GUARD,
                                                                              "smollm2-135m")
    comparison = made["comparison"]
    assert (comparison.protocol_id, comparison.model, comparison.suffix, comparison.date) == (GUARD, "m-1",
                                                                                             "anthropic", None)
    assert (made["open_weights_series"].model, made["open_weights_series"].protocol_id) == ("gen-7", ONE_WORD)
    assert (made["guard_margin_rotation"].date, made["guard_margin_rotation"].protocol_id) == ("2026-11-04", GUARD)
    fingerprint = made["subject_fingerprint"]
    assert (fingerprint.date, fingerprint.model, fingerprint.suffix) == ("2026-11-05", "claude-sonnet-5", "4")


def test_a_shortened_comparison_id_reads_back_with_its_hash_as_the_model():
    found = parse(comparison_run_id(OPEN, "org/" + "m" * 300, "anthropic"))
    assert (found.job, found.protocol_id, found.suffix) == ("comparison", OPEN, "anthropic")
    assert found.model == "org-" + "m" * 128 + "-c4be5989297a"


@pytest.mark.parametrize("text, job, date", [
    # Every real protocol's family holds an underscore, so a protocol at the end of an id can start at any of
    # them ("framing__wording__v0" is a protocol id too): protocol and models are left None, never guessed.
    ("bridge_claude-sonnet-5_to_claude-sonnet-6_risky_choice_framing__wording__v0_new", "bridge", None),
    ("ow_smollm2-135m-q8_risky_choice_framing__wording__v0", "open_weights_series", None),
    # a generation id with an underscore: "gen_1" + protocol, or "gen" + "1_decoy__order__v2"
    ("ow_gen_1_decoy__order__v2", "open_weights_series", None),
    # a sweep id without its month, or without a model after the protocol
    ("sweep_november_risky_choice_framing__wording__v0_m", "full_sweep", None),
    ("sweep_2026-11_risky_choice_framing__wording__v0_", "full_sweep", "2026-11"),
    ("sweep_2026-11_no-protocol-here", "full_sweep", "2026-11"),
])
def test_parse_leaves_what_an_id_does_not_place_one_way_alone_as_none(text, job, date):
    found = parse(text)
    assert (found.job, found.date, found.protocol_id, found.model, found.new_model) == (job, date, None, None, None)


def test_a_comparison_id_reads_its_api_as_the_word_after_the_protocol():
    """The archive's files sit below the subjects and name no provider (the provider table is
    llmarchive.subjects'): the API is the one "_"-free word between the protocol and the model, which splits
    one way alone; what `comparison run` accepts is the table's to say."""
    found = parse("comparison_risky_choice_framing__wording__v0_gemini_m")
    assert (found.job, found.protocol_id, found.suffix, found.model) == ("comparison", OPEN, "gemini", "m")
    assert parse("comparison_risky_choice_framing__wording__v0_m").protocol_id is None   # no API word: not placed


def test_a_bridge_whose_model_holds_to_keeps_its_protocol_and_role_but_not_its_models():
    found = parse(bridge_run_id("a_to_b", "c-6", ONE_WORD, "old"))
    assert found.text == "bridge_a_to_b_to_c-6_decoy__order__v2_old"
    assert (found.job, found.protocol_id, found.suffix) == ("bridge", ONE_WORD, "old")
    assert (found.model, found.new_model) == (None, None)
    # the role is read even when nothing else can be
    assert parse("bridge_claude-sonnet-5_to_claude-sonnet-6_risky_choice_framing__wording__v0_new").suffix == "new"


def test_a_retried_id_keeps_its_dash_k_in_the_model_rather_than_guess_it_is_an_attempt():
    found = parse(retry_run_id(manual_run_id("2026-11-03", OPEN, "smollm2-135m"), 2))
    assert (found.job, found.date, found.protocol_id, found.model) == ("manual", "2026-11-03", OPEN, "smollm2-135m-2")


@pytest.mark.parametrize("text", ["own-server", "2026-11-03_notaprotocol", "2026-11-03",
                                  "run-2026-11-03_" + OPEN + "_m", "sweep-2026-11_" + OPEN + "_m"])
def test_an_id_no_scheme_made_reads_back_with_no_job_and_no_parts(text):
    assert parse(text) == RunId(text)


def test_is_sweep_id_knows_the_sweeps_ids_only():
    assert is_sweep_id(sweep_run_id("2026-11-02", OPEN, "claude-sonnet-5"))
    assert not is_sweep_id(manual_run_id("2026-11-02", OPEN, "claude-sonnet-5"))
    assert not is_sweep_id(bridge_run_id("a", "b", OPEN, "old"))
    assert not is_sweep_id("sweep-2026-11")


# --------------------------------------------------------------------------
# what callers ask of a scheme
# --------------------------------------------------------------------------

def test_is_sweep_of_is_the_sweeps_id_for_that_month_and_protocol_whatever_the_model():
    run_id = sweep_run_id("2026-11-02", OPEN, "claude-sonnet-5")
    assert is_sweep_of(run_id, "2026-11", OPEN)
    assert is_sweep_of(run_id, "2026-11-30", OPEN), "a day is read as its month"
    assert is_sweep_of(sweep_run_id("2026-11-02", OPEN, "any/other model"), "2026-11", OPEN)
    assert not is_sweep_of(run_id, "2026-10", OPEN)
    assert not is_sweep_of(run_id, "2025-11", OPEN)
    assert not is_sweep_of(run_id, "2026-11", "base_rate_neglect__wording__v0")
    # a protocol whose id the other's begins with is not the other
    assert not is_sweep_of(sweep_run_id("2026-11-02", OPEN + "1", "m"), "2026-11", OPEN)
    assert not is_sweep_of(sweep_run_id("2026-11-02", OPEN, "m"), "2026-11", OPEN + "1")
    assert not is_sweep_of(manual_run_id("2026-11-02", OPEN, "m"), "2026-11", OPEN)


def test_fingerprint_session_counts_the_days_ledger_runs_of_that_model_legacy_ids_included():
    day, model = "2026-11-05", "claude-sonnet-5"
    assert fingerprint_session([], day, model) == 1
    assert fingerprint_session([fingerprint_run_id(day, model, 1)], day, model) == 2
    # an attempt of the first ledgers carried no @n: it counts as one
    legacy = "subject_fingerprint_2026-11-05_claude-sonnet-5"
    assert fingerprint_session([legacy], day, model) == 2
    assert fingerprint_session([legacy, fingerprint_run_id(day, model, 2)], day, model) == 3
    # a run id named by many ledger entries is one attempt
    assert fingerprint_session([fingerprint_run_id(day, model, 1)] * 24, day, model) == 2


def test_fingerprint_session_ignores_other_days_other_models_and_other_runs():
    day, model = "2026-11-05", "claude-sonnet-5"
    others = [fingerprint_run_id("2026-11-04", model, 1), fingerprint_run_id(day, "claude-sonnet-6", 1),
              fingerprint_run_id(day, model + "-extra", 1), "subject_fingerprint_2026-11-05_claude-sonnet-5-extra",
              sweep_run_id(day, OPEN, model), None]
    assert fingerprint_session(others, day, model) == 1
    assert fingerprint_session(others + [fingerprint_run_id(day, model, 1)], day, model) == 2


def test_the_imported_harness_logs_ids_keep_their_bytes_and_a_long_one_is_cut_like_a_comparison_id():
    from llmarchive.archive.run_ids import RUN_ID_MAX, inspect_run_id, lm_eval_run_id

    assert inspect_run_id("Xq3kT9") == "inspect-Xq3kT9"
    assert (lm_eval_run_id("20261202T101500", "risky_choice_framing__wording__v0", "org/My Model")
            == "lm-eval-20261202T101500-risky_choice_framing__wording__v0-org-My-Model")
    long = [lm_eval_run_id("20261202T101500", "risky_choice_framing__wording__v0", "m" * 250 + tail)
            for tail in ("a", "b")]
    assert all(len(run_id) == RUN_ID_MAX for run_id in long) and long[0] != long[1]
