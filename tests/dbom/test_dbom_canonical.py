"""RFC 8785 canonical JSON: the RFC's own examples, and the hashes that depend on it."""

from __future__ import annotations

import hashlib
import json
import struct

import pytest

from checks.dbom import DbomError, canonical_json, evaluation_sha256

# RFC 8785 §3.2.2: serialization of primitive data types
RFC_INPUT = r'''{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}'''
RFC_OUTPUT = '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' \
             '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'

# RFC 8785 §3.2.3: sorting of object properties by UTF-16 code units
RFC_SORT_INPUT = r'''{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}'''
RFC_SORT_ORDER = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]

# RFC 8785 Appendix B: IEEE 754 doubles and their canonical spelling
RFC_NUMBERS = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


def test_rfc8785_primitive_example() -> None:
    assert canonical_json(json.loads(RFC_INPUT)) == RFC_OUTPUT.encode("utf-8")


def test_rfc8785_sorting_example() -> None:
    out = canonical_json(json.loads(RFC_SORT_INPUT)).decode("utf-8")
    assert list(json.loads(out)) == RFC_SORT_ORDER
    assert out.startswith('{"\\r":"Carriage Return","1":"One","\u0080":"Control"')


@pytest.mark.parametrize(("bits", "expected"), RFC_NUMBERS)
def test_rfc8785_number_formatting(bits: str, expected: str) -> None:
    value = struct.unpack(">d", bytes.fromhex(bits))[0]
    assert canonical_json(value) == expected.encode()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 2**53 + 1, {1: "x"}, "\ud800"])
def test_values_outside_json_are_refused(bad: object) -> None:
    with pytest.raises(DbomError):
        canonical_json(bad)


def test_key_order_and_float_spelling_do_not_change_the_hash() -> None:
    a = json.loads('{"cis_score": 0.50, "scores": {"b": 1E0, "a": 2.50e-1}, "verdict": "pass"}')
    b = json.loads('{"verdict": "pass", "scores": {"a": 0.25, "b": 1}, "cis_score": 5e-1}')
    assert json.dumps(a) != json.dumps(b)
    assert canonical_json(a) == canonical_json(b) == b'{"cis_score":0.5,"scores":{"a":0.25,"b":1},"verdict":"pass"}'
    assert evaluation_sha256(a) == evaluation_sha256(b) == hashlib.sha256(canonical_json(a)).hexdigest()
    assert evaluation_sha256(a) == "903e92421bfd4714959e0cf1ca7fb8c94488fd0a8a5a6d688073f6ccfc61bce0"
