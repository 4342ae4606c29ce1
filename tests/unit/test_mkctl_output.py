"""mkctl's Go-compatible pieces, each on its own: YAML written as go-yaml v2 writes it and
read back, Go's JSON and numbers, the tabwriter, pflag's syntax, and table decoration.
(tests/test_mkctl.py compares the assembled output with the real kubectl's.)"""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from minikube_py.api.gofmt import format_float, json_float, sprint
from minikube_py.api.goyaml.emit import YAMLError, dump, sorted_keys
from minikube_py.api.goyaml.read import _BlockReader, _Unsupported, load
from minikube_py.api.goyaml.resolve import resolve
from minikube_py.mkctl.flags import BOOL, INT, STRINGS, Flag, FlagError, FlagSet
from minikube_py.mkctl.printers.gojson import dumps
from minikube_py.mkctl.printers.table import PrintOptions, TablePrinter
from minikube_py.mkctl.printers.tabwriter import TabWriter

# -- YAML out ------------------------------------------------------------------------------


def test_keys_sort_naturally_digits_as_numbers_letters_after_symbols() -> None:
    keys = ["a10", "a2", "A_b", "a_B", "Z_a", "b", "0755", "a-1", "ab"]
    assert sorted_keys(dict.fromkeys(keys)) == [  # as kubectl printed them
        "0755", "A_b", "Z_a", "a-1", "a_B", "a2", "a10", "ab", "b"]


@pytest.mark.parametrize(("value", "written"), [
    ("plain", "plain"), ("", '""'), ("true", '"true"'), ("yes", '"yes"'), ("on", '"on"'),
    ("y", '"y"'), ("~", '"~"'), ("null", '"null"'), ("1", '"1"'), ("0755", '"0755"'),
    ("08", '"08"'), ("1e3", '"1e3"'), ("0x1F", '"0x1F"'), (".5", '".5"'), ("1:20", '"1:20"'),
    ("39e484", "39e484"), (".5e999", ".5e999"),  # past float64's range: strings to Go
    ("2026-11-25T09:30:34Z", '"2026-11-25T09:30:34Z"'), ("2026-02-30", "2026-02-30"),
    ("a: b", "'a: b'"), ("*star", "'*star'"), ("- x", "'- x'"), ("-x", "-x"), ("?x", "?x"),
    ("a #b", "'a #b'"), ("a#b", "a#b"), ("it's", "it's"), ('say "hi"', 'say "hi"'),
    ("trailing ", "'trailing '"), ("a\tb", '"a\\tb"'), ("\x01", '"\\x01"'),
    ("smile \U0001F600", '"smile \\U0001F600"'), ("héllo ☃", "héllo ☃"),
])
def test_strings_are_quoted_exactly_when_go_yaml_quotes_them(value: str, written: str) -> None:
    assert dump({"k": value}) == f"k: {written}\n"


def test_multiline_strings_are_literal_blocks_with_chomping_hints() -> None:
    assert dump({"k": "a\nb\n"}) == "k: |\n  a\n  b\n"
    assert dump({"k": "a\nb"}) == "k: |-\n  a\n  b\n"
    assert dump({"k": "a\n\n"}) == "k: |+\n  a\n\n"
    assert dump({"k": "  a\nb"}) == "k: |2-\n    a\n  b\n"
    assert dump({"k": "a \nb"}) == 'k: "a \\nb"\n'  # a space before the break: quoted


def test_long_plain_strings_fold_at_a_space_past_column_80() -> None:
    text = " ".join(["word"] * 30)
    written = dump({"key": text})
    assert written.splitlines()[0] == "key: " + " ".join(["word"] * 16)
    assert yaml.safe_load(written) == {"key": text}


def test_sequences_under_a_key_are_not_indented_and_empties_are_flow() -> None:
    assert dump({"a": [{"b": 1, "c": [1, 2]}, [3]], "d": {}, "e": [], "f": None}) == (
        "a:\n- b: 1\n  c:\n  - 1\n  - 2\n- - 3\nd: {}\ne: []\nf: null\n")


def test_numbers_and_booleans_are_written_as_go_writes_them() -> None:
    assert dump({"i": 5, "f": 1.5, "g": 1e6, "h": 2.0, "t": True}) == (
        "f: 1.5\ng: 1e+06\nh: 2\ni: 5\nt: true\n")


def test_characters_go_yaml_cannot_read_back_fail_the_output() -> None:
    with pytest.raises(YAMLError, match="control characters are not allowed"):
        dump({"k": "del\x7f"})


# -- YAML in --------------------------------------------------------------------------------

KEYS = st.text(st.sampled_from("abcXYZ019-_./"), min_size=1, max_size=8)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.text(st.sampled_from("ab01 :#-'\"*&!|>%@`{}[],?.~éxyz=+\\"), max_size=12))
DOCUMENTS = st.recursive(
    SCALARS, lambda children: st.one_of(st.lists(children, max_size=4),
                                        st.dictionaries(KEYS, children, max_size=4)),
    max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, DOCUMENTS, min_size=1, max_size=5))
def test_what_the_emitter_writes_the_block_reader_reads_back(document: dict[str, Any]) -> None:
    text = dump(document)
    if "\\" in text or re.search(r" \|[0-9+-]*$", text, re.MULTILINE) or any(
            len(line) > 80 for line in text.splitlines()):  # escapes, blocks, folding
        return  # left to PyYAML, by design
    assert _BlockReader(text).read() == document


def test_a_kubectl_written_kubeconfig_is_read_without_pyyaml() -> None:
    text = ("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: QUJD\n"
            "    server: https://127.0.0.1:6443\n  name: c\ncontexts:\n- context:\n"
            "    cluster: c\n    user: u # the admin\n  name: c\ncurrent-context: c\n"
            "kind: Config\npreferences: {}\nusers:\n- name: u\n  user:\n"
            "    token: 'it''s'\n    as-groups: []\n")
    assert _BlockReader(text).read() == yaml.safe_load(text)


@pytest.mark.parametrize("text", [
    "a: {b: 1}\n", "a: |\n  text\n", "a: &x 1\nb: *x\n", "a: !!str 1\n", "a: b\n  c\n",
    "a: \"esc\\tape\"\n", "---\na: 1\n---\nb: 2\n", "? complex\n: key\n",
])
def test_anything_beyond_block_style_is_left_to_pyyaml(text: str) -> None:
    with pytest.raises(_Unsupported):
        _BlockReader(text).read()
    if text.count("---") < 2:
        assert load(text) == yaml.safe_load(text)


@pytest.mark.parametrize(("text", "expected"), [
    ("yes", True), ("Off", False), ("~", None), ("", None), ("12", 12), ("-0x1F", -31),
    ("0o17", 15), ("0755", 493), ("1_000", 1000), ("1e3", 1000.0), (".5", 0.5), ("08", 8.0),
    ("1:20", "1:20"), ("+inf", "+inf"), ("0b101", 5), ("v1", "v1"),
])
def test_plain_scalars_resolve_by_go_yamls_yaml_1_1_rules(text: str, expected: Any) -> None:
    assert resolve(text)[1] == expected


# -- JSON and Go's numbers ----------------------------------------------------------------

def test_json_is_indented_by_four_escapes_html_and_sorts_keys() -> None:
    assert dumps({"b": "<a&b>", "a": [1, {}], "c": "\u2028"}) == (
        '{\n    "a": [\n        1,\n        {}\n    ],\n    "b": "\\u003ca\\u0026b\\u003e",\n'
        '    "c": "\\u2028"\n}')
    assert dumps({"b": 1, "a": 2}, indent=None, sort_keys=False) == '{"b":1,"a":2}'


@pytest.mark.parametrize(("value", "g", "json"), [
    (1e6, "1e+06", "1000000"), (123456.0, "123456", "123456"), (0.0001, "0.0001", "0.0001"),
    (1e21, "1e+21", "1e+21"), (1.5e-7, "1.5e-07", "1.5e-7"), (2.0, "2", "2"),
])
def test_floats_are_spelled_as_go_spells_them(value: float, g: str, json: str) -> None:
    assert (format_float(value, "g"), json_float(value)) == (g, json)


def test_sprint_formats_values_as_fmt_does() -> None:
    assert sprint({"b": [1, 2.5, None], "a": True}) == "map[a:true b:[1 2.5 <nil>]]"


# -- the tabwriter ---------------------------------------------------------------------------

def test_columns_are_the_widest_cell_plus_three_at_least_six_last_unpadded() -> None:
    out = io.StringIO()
    writer = TabWriter(out)
    writer.write_row(["NAME", "AGE", "LABELS"])
    writer.write_row(["a-long-name", "5s", ""])
    writer.flush()
    assert out.getvalue() == "NAME          AGE   LABELS\na-long-name   5s    \n"


def test_remembered_widths_keep_later_rows_aligned_with_earlier_ones() -> None:
    out = io.StringIO()
    writer = TabWriter(out)
    writer.write_row(["a-long-name", "x", "y"])
    writer.flush()
    writer.write_row(["b", "x", "y"])
    writer.flush()
    writer.forget_widths()
    writer.write_row(["c", "x", "y"])
    writer.flush()
    assert out.getvalue().splitlines() == ["a-long-name   x     y", "b             x     y",
                                           "c     x     y"]


# -- pflag ---------------------------------------------------------------------------------

FLAGS = FlagSet([Flag("namespace", shorthand="n"), Flag("watch", BOOL, shorthand="w"),
                 Flag("all-namespaces", BOOL, shorthand="A"), Flag("chunk-size", INT),
                 Flag("label-columns", STRINGS, shorthand="L")])


@pytest.mark.parametrize("args", [
    ["--namespace=web"], ["--namespace", "web"], ["-n", "web"], ["-nweb"], ["-n=web"],
])
def test_a_value_flag_is_given_in_any_of_pflags_forms(args: list[str]) -> None:
    parsed = FLAGS.parse(["get", *args, "pods"])
    assert (parsed["namespace"], parsed.args) == ("web", ["get", "pods"])


def test_booleans_combine_and_take_values_only_after_an_equals_sign() -> None:
    parsed = FLAGS.parse(["-Aw=false", "false"])
    assert (parsed["all-namespaces"], parsed["watch"], parsed.args) == (True, False, ["false"])
    assert FLAGS.parse(["--watch", "x"])["watch"] is True


def test_string_lists_repeat_and_split_on_commas_and_double_dash_ends_flags() -> None:
    parsed = FLAGS.parse(["-L", "a,b", "--label-columns=c", "--", "-n"])
    assert (parsed["label-columns"], parsed.args, parsed.changed) == (
        ["a", "b", "c"], ["-n"], {"label-columns"})


@pytest.mark.parametrize(("args", "message"), [
    (["--foo"], "unknown flag: --foo"),
    (["-x"], "unknown shorthand flag: 'x' in -x"),
    (["-Ax"], "unknown shorthand flag: 'x' in -Ax"),
    (["--namespace"], "flag needs an argument: --namespace"),
    (["-n"], "flag needs an argument: 'n' in -n"),
    (["--watch=maybe"], 'invalid argument "maybe" for "-w, --watch" flag: strconv.ParseBool: '
                        'parsing "maybe": invalid syntax'),
    (["--chunk-size=x"], 'invalid argument "x" for "--chunk-size" flag: strconv.ParseInt: '
                         'parsing "x": invalid syntax'),
])
def test_flag_errors_carry_pflags_words(args: list[str], message: str) -> None:
    with pytest.raises(FlagError) as failure:
        FLAGS.parse(args)
    assert str(failure.value) == message


# -- table decoration -------------------------------------------------------------------------

TABLE = {
    "kind": "Table", "apiVersion": "meta.k8s.io/v1",
    "columnDefinitions": [{"name": "Name", "type": "string", "format": "name", "priority": 0},
                          {"name": "Status", "type": "string", "priority": 0},
                          {"name": "IP", "type": "string", "priority": 1}],
    "rows": [{"cells": ["web", "Running\nsince now", "10.0.0.1"],
              "object": {"metadata": {"name": "web", "namespace": "prod",
                                      "labels": {"app": "web", "tier": "front"}}}},
             {"cells": ["db", "Pending\x1b[31m", None],
              "object": {"metadata": {"name": "db", "namespace": "prod"}}}],
}


def print_table(**options: Any) -> str:
    out = io.StringIO()
    writer = TabWriter(out)
    TablePrinter(PrintOptions(**options), writer).print_table(TABLE)
    writer.flush()
    return out.getvalue()


def test_cells_stop_at_a_line_break_and_escapes_are_defused() -> None:
    assert print_table().splitlines() == ["NAME   STATUS", "web    Running...",
                                          "db     Pending^[[31m"]


def test_namespace_kind_labels_and_wide_columns_decorate_the_table() -> None:
    assert print_table(with_namespace=True, with_kind=True, kind="Pod", wide=True,
                       show_labels=True, column_labels=["app.kubernetes.io/app", "tier"]
                       ).splitlines() == [
        "NAMESPACE   NAME      STATUS          IP         APP   TIER    LABELS",
        "prod        pod/web   Running...      10.0.0.1         front   app=web,tier=front",
        "prod        pod/db    Pending^[[31m                            <none>"]


def test_an_empty_table_prints_no_header() -> None:
    out = io.StringIO()
    writer = TabWriter(out)
    TablePrinter(PrintOptions(), writer).print_table({**TABLE, "rows": []})
    writer.flush()
    assert out.getvalue() == ""


@pytest.mark.parametrize(("elapsed", "age"), [
    (45, "45s"), (119, "119s"), (5 * 60 + 2, "5m2s"), (3 * 3600, "3h"), (3 * 3600 + 120, "3h2m"),
    (53 * 3600, "2d5h"), (400 * 86400, "400d"), (-1, "0s"), (-5, "<invalid>"),
])
def test_ages_computed_here_read_as_kubectls(elapsed: int, age: str) -> None:
    """The AGE of objects the server sends as they are, not as a Table (printObjectMeta)."""
    from datetime import UTC, datetime, timedelta

    from minikube_py.mkctl.printers.table import _age

    created = datetime(2026, 1, 1, tzinfo=UTC)
    assert _age("2026-01-01T00:00:00Z", created + timedelta(seconds=elapsed)) == age
    assert _age(None, created) == "<unknown>"
