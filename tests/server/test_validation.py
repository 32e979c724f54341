"""Pydantic errors as one sentence a model can act on."""

from __future__ import annotations

import enum
import math
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from handles.server._validation import describe_errors, shorten


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Inner(BaseModel):
    n: int


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    le: Annotated[int, Field(le=50)] = 0
    lt: Annotated[int, Field(lt=50)] = 0
    ge: Annotated[int, Field(ge=1)] = 1
    gt: Annotated[float, Field(gt=0)] = 1
    short: Annotated[str, Field(min_length=2, max_length=3)] = "ab"
    items: Annotated[list[int], Field(min_length=1, max_length=2)] = [1]
    flag: bool = False
    ratio: float = 0.0
    text: str = ""
    mapping: dict[str, int] = {}
    inner: Inner | None = None
    choice: Literal["a", "b"] = "a"
    colour: Colour = Colour.RED
    code: Annotated[str, Field(pattern=r"^[A-Z]{3}$")] = "ABC"
    whole: int = 0


def describe(**arguments: Any) -> str:
    with pytest.raises(ValidationError) as caught:
        Args.model_validate(arguments)
    return describe_errors(caught.value)


@pytest.mark.parametrize(
    ("arguments", "sentence"),
    [
        ({"le": 200}, "le: must be at most 50, got 200"),
        ({"lt": 50}, "lt: must be less than 50, got 50"),
        ({"ge": 0}, "ge: must be at least 1, got 0"),
        ({"gt": -1.5}, "gt: must be greater than 0.0, got -1.5"),
        ({"short": "a"}, 'short: must be at least 2 characters long, got "a"'),
        ({"short": "abcd"}, 'short: must be at most 3 characters long, got "abcd"'),
        ({"items": []}, "items: must have at least 1 items, got []"),
        ({"items": [1, 2, 3]}, "items: must have at most 2 items, got [1, 2, 3]"),
        ({"items": "x"}, 'items: must be an array, got "x"'),
        ({"items": [1, "x"]}, 'items.1: must be an integer, got "x"'),
        ({"whole": "x"}, 'whole: must be an integer, got "x"'),
        ({"whole": [1]}, "whole: must be an integer, got [1]"),
        ({"whole": 1.5}, "whole: must be a whole number, got 1.5"),
        ({"ratio": "x"}, 'ratio: must be a number, got "x"'),
        ({"ratio": [1]}, "ratio: must be a number, got [1]"),
        ({"text": 5}, "text: must be a string, got 5"),
        ({"flag": "maybe"}, 'flag: must be true or false, got "maybe"'),
        ({"flag": [True]}, "flag: must be true or false, got [true]"),
        ({"mapping": [1]}, "mapping: must be an object, got [1]"),
        ({"inner": 5}, "inner: must be an object, got 5"),
        ({"inner": {"n": "x"}}, 'inner.n: must be an integer, got "x"'),
        ({"choice": "c"}, "choice: must be one of 'a' or 'b', got \"c\""),
        ({"colour": "green"}, "colour: must be one of 'red' or 'blue', got \"green\""),
        ({"code": "abc"}, 'code: must match the pattern ^[A-Z]{3}$, got "abc"'),
        ({"nope": 1}, "nope: is not a parameter of this tool"),
    ],
)
def test_one_clause_per_error(arguments: dict[str, Any], sentence: str) -> None:
    assert describe(**arguments) == sentence


def test_missing_fields_say_required_without_the_input() -> None:
    class Needs(BaseModel):
        a: int
        b: str

    with pytest.raises(ValidationError) as caught:
        Needs.model_validate({})
    assert describe_errors(caught.value) == "a: is required; b: is required"


def test_errors_are_joined_in_order() -> None:
    assert describe(le=51, text=1, nope=True) == (
        "le: must be at most 50, got 51; text: must be a string, got 1; "
        "nope: is not a parameter of this tool"
    )


def test_unmapped_error_types_use_pydantic_message_lower_cased() -> None:
    class Dated(BaseModel):
        day: Annotated[int, Field(multiple_of=7)]

    with pytest.raises(ValidationError) as caught:
        Dated.model_validate({"day": 8})
    assert describe_errors(caught.value) == "day: input should be a multiple of 7, got 8"


def test_a_root_error_is_located_at_arguments() -> None:
    with pytest.raises(ValidationError) as caught:
        Args.model_validate("not a dict")
    assert describe_errors(caught.value) == 'arguments: must be an object, got "not a dict"'


def test_no_documentation_links() -> None:
    assert "pydantic.dev" not in describe(le=200, ratio="x")


def test_long_inputs_are_shortened() -> None:
    sentence = describe(text=["x" * 500])
    assert sentence == 'text: must be a string, got ["' + "x" * 58 + "…"
    assert len(sentence) < 100


def test_shorten() -> None:
    assert shorten("abc") == '"abc"'
    assert shorten("x" * 100) == '"' + "x" * 59 + "…"
    assert shorten({"a": None}) == '{"a": null}'
    assert shorten(b"bytes") == "\"b'bytes'\""  # not JSON: str() then quoted
    assert shorten("é") == '"é"'
    assert shorten(math.nan) == "NaN"


def test_shorten_survives_unserialisable_values() -> None:
    loop: list[Any] = []
    loop.append(loop)
    assert shorten(loop) == "[[...]]"


@settings(deadline=None, max_examples=60)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), st.lists, max_leaves=8))
def test_shorten_never_exceeds_its_limit(value: Any) -> None:
    assert len(shorten(value)) <= 61  # 60 characters and an ellipsis
