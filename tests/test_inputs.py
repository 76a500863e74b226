"""The validation layer (nader.inputs): every refusal is an InputError with one line naming the source."""
from __future__ import annotations

import math
import os

import pytest

from nader.inputs import (InputError, bounded_str, check_depth, csv_rows, finite_number, load_json, load_toml,
                          nesting_depth, non_negative, positive, read_bounded_bytes, read_bounded_text)


def refused(call, *args, **kwargs) -> str:
    with pytest.raises(InputError) as info:
        call(*args, **kwargs)
    message = str(info.value)
    assert "\n" not in message and "Traceback" not in message
    return message


# -- numbers -----------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, "nan", "inf", True, None, "x", [1]])
def test_non_finite_and_untyped_numbers_are_refused(value):
    assert "valid_acc" in refused(finite_number, value, "valid_acc", from_text=True)


def test_ranges_and_integers():
    assert finite_number(42.5, "acc", lo=0, hi=100) == 42.5
    assert "below" in refused(finite_number, -50, "acc", lo=0, hi=100)
    assert "above" in refused(finite_number, 150, "acc", lo=0, hi=100)
    assert finite_number(3.0, "seed", integer=True) == 3 and type(finite_number(3.0, "seed", integer=True)) is int
    assert "whole" in refused(finite_number, 3.5, "seed", integer=True)
    assert "above" in refused(finite_number, 99999999999999999999, "seed", integer=True, hi=2**32 - 1)
    assert finite_number(" 12 ", "cell", from_text=True) == 12.0
    assert "too long" in refused(finite_number, "9" * 5000, "cell", from_text=True, integer=True)
    assert "expected a number" in refused(finite_number, "12", "flag")


def test_positive_and_non_negative():
    assert positive(0.5, "cap") == 0.5
    for value in (0, -1, math.nan, math.inf):
        assert "cap" in refused(positive, value, "cap")
    assert non_negative(0, "tokens") == 0
    assert "negative" in refused(non_negative, -40, "tokens")


def test_bounded_str():
    assert bounded_str("abc", "name", 3) == "abc"
    assert "too long" in refused(bounded_str, "abcd", "name", 3)
    assert "expected text" in refused(bounded_str, 4, "name", 3)


# -- files -------------------------------------------------------------------------------------
def test_regular_files_only(tmp_path):
    good = tmp_path / "a.toml"
    good.write_bytes(b"\xef\xbb\xbfx = 1\n")
    assert read_bounded_text(good, "config") == "x = 1\n"  # the byte-order mark is not content
    assert "character device" in refused(read_bounded_bytes, "/dev/zero", "config")
    assert "directory" in refused(read_bounded_bytes, tmp_path, "config")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert "loops" in refused(read_bounded_bytes, loop, "config")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert "FIFO" in refused(read_bounded_bytes, fifo, "config")  # returns: no writer is waited for
    assert "No such file" in refused(read_bounded_bytes, tmp_path / "none", "config")


def test_size_and_encoding(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    assert "larger than 100 bytes" in refused(read_bounded_bytes, big, "table", max_bytes=100)
    assert len(read_bounded_bytes(big, "table", max_bytes=101)) == 101
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"a = 1\nb = '\xff'\n")
    message = refused(read_bounded_text, bad, "LLM configuration")
    assert str(bad) in message and "UTF-8" in message and "line 2" in message


# -- structured text -----------------------------------------------------------------------------
def test_nesting_is_measured_outside_strings_and_comments():
    assert nesting_depth('{"a": "[[[[", "b": [[1]]}', "json") == 3
    assert nesting_depth('a = "[[[[" # [[[[\n[t]\nb = [[1], {c = 2}]\n', "toml") == 2
    assert nesting_depth("x = '''\n[[[\n'''\n", "toml") == 0
    assert nesting_depth('"\\"[["', "json") == 0


def test_json_bounds():
    assert load_json('{"a": [1, 2.5, "x"]}', "cell") == {"a": [1, 2.5, "x"]}
    assert "nested" in refused(load_json, "[" * 200_000 + "]" * 200_000, "cell")
    assert "5,000 characters" in refused(load_json, "1" * 5000, "cell")
    assert "out of range" in refused(load_json, "1e999", "cell")
    assert "finite" in refused(load_json, '{"a": NaN}', "cell")
    assert math.isnan(load_json("NaN", "cell", allow_nonfinite=True))
    assert "line 1" in refused(load_json, "{", "cell")
    assert "JSON text" in refused(load_json, b"{}", "cell")


def test_toml_bounds(tmp_path):
    assert load_toml('a = [1, {b = "[["}]', "config") == {"a": [1, {"b": "[["}]}
    assert "nested" in refused(load_toml, "x = " + "[" * 5000 + "]" * 5000, "config")
    assert "nested" in refused(load_toml, ".".join(["a"] * 5000) + " = 1", "config")  # dotted keys, no brackets
    assert "4,300 digits" in refused(load_toml, "x = " + "9" * 5000, "config")
    assert "invalid TOML" in refused(load_toml, "x = ", "config")
    assert math.isinf(load_toml("x = inf", "config")["x"])  # left to the caller's finite_number
    path = tmp_path / "search.toml"
    path.write_text("[search]\nseeds = [1]\n")
    assert load_toml(path, "search configuration") == {"search": {"seeds": [1]}}
    assert str(path) in refused(load_toml, path, "search configuration", max_bytes=4)


def test_check_depth_without_recursion():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert "nested more than 64" in refused(check_depth, deep, "cell")
    assert check_depth({"a": [[1]]}, "cell") == {"a": [[1]]}


def test_csv_field_and_row_limits():
    assert list(csv_rows("arch,acc\n|x|,1\n", "t.csv")) == [["arch", "acc"], ["|x|", "1"]]
    message = refused(lambda: list(csv_rows("arch,acc\n" + "x" * 131_073 + ",1\n", "t.csv")))
    assert "t.csv" in message and "line 2" in message
    assert "line 2" in refused(lambda: list(csv_rows("arch\n" + "y" * 20 + "\n", "t.csv", max_field_chars=10)))
    assert "more than 1 rows" in refused(lambda: list(csv_rows("a\n1\n2\n", "t.csv", max_rows=1)))
