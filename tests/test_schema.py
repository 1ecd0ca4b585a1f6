"""The schema: closed lists, the _pct rule both ways, the schema hash."""
from measure import schema
from measure.canonical import canonical_sha256
from tests.measure_helpers import RUN, healthy_plan, protocol, trials_from
from measure.measurement import build


def test_record_types_are_the_closed_list_of_thirteen():
    assert len(schema.RECORD_TYPES) == 13
    assert len(set(schema.RECORD_TYPES)) == 13


def test_every_field_has_a_known_type_label_and_a_description():
    for name, label in schema.MEASUREMENT_FIELDS + schema.OUTCOME_FIELDS:
        assert label in schema.TYPE_LABELS, name
    assert set(schema.FIELD_DESCRIPTIONS) == set(schema.MEASUREMENT_FIELD_NAMES)
    assert set(schema.OUTCOME_FIELD_DESCRIPTIONS) == set(schema.OUTCOME_FIELD_NAMES)


def test_pct_rule_every_pct_typed_field_is_named_pct():
    for name, label in schema.MEASUREMENT_FIELDS:
        if label == "pct":
            assert "_pct" in name, f"{name} is typed pct but its name does not say _pct"


def test_pct_rule_every_field_named_pct_holds_percentages():
    record = build(protocol(), trials_from(healthy_plan()), RUN)

    def leaves(value):
        if isinstance(value, dict):
            for v in value.values():
                yield from leaves(v)
        elif isinstance(value, list):
            for v in value:
                yield from leaves(v)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield value

    for name, label in schema.MEASUREMENT_FIELDS:
        if "_pct" in name:
            assert label in ("pct", "json"), f"{name} is named _pct but typed {label}"
            assert all(0 <= v <= 100 for v in leaves(record[name])), name
        if label == "unit_interval":
            assert "_pct" not in name
            assert record[name] is None or 0 <= record[name] <= 1


def test_schema_hash_covers_names_and_types_only():
    expected = canonical_sha256({
        "schema_version": schema.SCHEMA_VERSION,
        "record_types": list(schema.RECORD_TYPES),
        "measurement_fields": [list(f) for f in schema.MEASUREMENT_FIELDS],
        "outcome_fields": [list(f) for f in schema.OUTCOME_FIELDS],
    })
    assert schema.SCHEMA_SHA256 == expected
    assert schema.SCHEMA_VERSION == 2


def test_measurement_fields_include_everything_spec_section_10_lists():
    required = """record_type schema_version run_id run_date protocol_id rewording_type subject_model_id
    stability_pct ci_low_pct ci_high_pct gap_pct gap_null_pct gap_positive_pct null_floor_pct at_noise_floor n
    n_valid item_id n_items k entropy_a entropy_b u_a u_a_prime u_b u_c drop_bound_pct_ab drop_bound_pct_aa
    drop_bound_pct_ac drop_asymmetry_pct_ab drop_asymmetry_pct_aa drop_asymmetry_pct_ac scenario_gaps_pct
    scenario_spread_pct scenario_concentration_pct outcomes decisions flags gates on_curve panel_sha256
    protocol_sha256 extractor_sha analysis_code_sha schema_sha256 grammar_version series lane twin_id
    model_family returned_model_id api_surface_sha condition_profile replicate_index""".split()
    assert set(required) <= set(schema.MEASUREMENT_FIELD_NAMES)
