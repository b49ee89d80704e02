"""Property-based checks of redaction (hypothesis): whatever the secret looks like, set in the environment
under a secret name or given as the value of a secret-named key, at any depth, nested in or overlapping
another secret, it never appears in what redaction returns."""

from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from primus.redaction import MASK, redact_mapping, redact_text

FILLER = " \n\t,;"  # what separates the secrets in the generated text
MIN_ENV_SECRET = 6  # redaction.py's _MIN_LITERAL: shorter environment values are left visible on purpose
# Any character a value can hold in the environment, but the mask's own "*" (a mask next to text could
# otherwise spell a "secret" the input never held) and, for the strict check, the filler.
ANY_CHAR = st.characters(exclude_categories=("Cs",), exclude_characters="\x00*")
SECRET_CHAR = st.characters(exclude_categories=("Cs",), exclude_characters="\x00*" + FILLER)
SECRET_NAMES = ["PRIMUS_PROP_API_KEY", "PRIMUS_PROP_TOKEN", "primus_prop_password", "PrimusPropSecret", "PROP_DB_PASS"]
FAST = settings(max_examples=60, deadline=None)


def planted(draw, chars):
    """(secrets, text): a secret, one containing it, one overlapping its end, laid out between fillers."""
    secret = st.text(chars, min_size=MIN_ENV_SECRET, max_size=16)
    base = draw(secret)
    containing = draw(st.text(chars, max_size=5)) + base + draw(st.text(chars, min_size=1, max_size=5))
    overlapping = base[len(base) // 2:] + draw(st.text(chars, min_size=MIN_ENV_SECRET, max_size=8))
    pieces = draw(st.permutations([containing, base, base[:len(base) // 2] + overlapping]))
    fillers = draw(st.lists(st.text(FILLER, min_size=1, max_size=3), min_size=4, max_size=4))
    return [base, containing, overlapping], "".join(f + p for f, p in zip(fillers, pieces)) + fillers[-1]


@contextmanager
def env_secrets(secrets):
    with pytest.MonkeyPatch.context() as patch:
        for name, value in zip(SECRET_NAMES, secrets):
            patch.setenv(name, value)
        yield


def leaves(value):
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]


@FAST
@given(st.data())
def test_no_character_of_an_environment_secret_survives_in_text(data):
    secrets, text = planted(data.draw, SECRET_CHAR)
    with env_secrets(secrets):
        out = redact_text(text)
    visible = out.replace(MASK, "")
    assert set(visible) <= set(FILLER), (secrets, text, out)  # nested and overlapping: not a character left


@FAST
@given(st.data())
def test_no_environment_secret_of_any_shape_appears_in_text_or_a_mapping(data):
    secrets, text = planted(data.draw, ANY_CHAR)
    config = {"note": text, "nested": {"lines": [text, {"deep": text}]}}
    with env_secrets(secrets):
        outputs = [redact_text(text), *leaves(redact_mapping(config))]
    for secret in secrets:
        assert not any(secret in out for out in outputs), (secret, outputs)


@FAST
@given(secret=st.text(ANY_CHAR, min_size=1, max_size=40), name=st.sampled_from(SECRET_NAMES),
       depth=st.integers(0, 3))
def test_a_value_under_a_secret_name_never_appears_at_any_depth(secret, name, depth):
    config = {name: secret, "hosts": [{name: secret}]}
    for level in range(depth):
        config = {f"level{level}": config, "items": [config]}
    assert set(leaves(redact_mapping(config))) == {MASK}
