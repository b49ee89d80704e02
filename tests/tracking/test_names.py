import hashlib
import subprocess
import sys

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from mlflow.exceptions import MlflowException
from mlflow.utils.validation import (
    MAX_ENTITY_KEY_LENGTH,
    _validate_length_limit,
    _validate_metric_name,
    _validate_param_name,
    _validate_tag_name,
)

from primus.tracking.measure.names import SCHEMA, MlflowKeys, is_valid_mlflow_key, mlflow_key, mlflow_keys

MEGATRON = ["lm loss", "learning-rate", "grad-norm", "loss-scale", "batch-size", "iteration-time",
            "lm loss validation", "lm loss validation ppl", "params-norm", "num-zeros", "mem-allocated-bytes"]
TORCHTITAN = ["loss_metrics/global_avg_loss", "memory/max_reserved(%)", "memory/max_reserved(GiB)", "mfu(%)",
              "throughput(tps)", "time_metrics/end_to_end(s)", "time_metrics/data_loading(%)"]
HOSTILE = ["a(b", "a)b", "a_b", "a%b", "a_pct_b", "/abs", "a//b", "a/../b", "..", ".", "x" * 300, "x" * 301, "ünï",
           "a:b", "a b", "a\tb", "a\nb", "(", ")", "%", "", "tab\t", "metric", "x" * 250]


@pytest.fixture(autouse=True)
def _uncached():
    """Each test sees what the code gives now, not a key an earlier test (or process forked from) cached."""
    mlflow_key.cache_clear()


def mlflow_accepts(key: str) -> bool:
    """MLflow's own checks (mlflow.utils.validation: characters, path rules, key length), not ours."""
    try:
        for validate in (_validate_metric_name, _validate_param_name, _validate_tag_name):
            validate(key)
        _validate_length_limit("key", MAX_ENTITY_KEY_LENGTH, key)
    except MlflowException:
        return False
    return True


def test_valid_names_pass_through_unchanged():
    for name in MEGATRON + list(SCHEMA):
        assert mlflow_key(name) == name


@pytest.mark.parametrize(("name", "key"), [
    ("throughput(tps)", "throughput_tps"), ("memory/max_active(GiB)", "memory/max_active_GiB"),
    ("memory/max_reserved(%)", "memory/max_reserved_pct"), ("mfu(%)", "mfu_pct"),
    ("time_metrics/end_to_end(s)", "time_metrics/end_to_end_s"), ("a%b", "a_pct_b")])
def test_refused_names_become_readable_keys_without_a_hash(name, key):
    assert not mlflow_accepts(name)
    assert mlflow_key(name) == key
    assert MlflowKeys()(name) == key


@pytest.mark.parametrize("name", ["_", "x", "a__b" + "x" * 246, "_" + "y" * 249])
def test_names_mlflow_accepts_keep_themselves_from_one_character_to_the_limit(name):
    assert mlflow_accepts(name)
    assert mlflow_key(name) == name and MlflowKeys()(name) == name


def test_a_name_whose_hashed_keys_are_all_taken_still_gets_a_key_of_its_own():
    """Each key the long name would get is taken by another name in turn (as a resumed run's map could hold
    them): past every hashed key it gets a counted one, still one that MLflow accepts and nobody else holds."""
    name = "x" * 300
    taken: dict[str, str] = {}
    for n in range(40):  # 33 hashed keys (8 to 40 hex digits), then counted ones
        keys = MlflowKeys(taken)
        key = keys(name)
        assert mlflow_accepts(key), key
        assert key not in taken.values() and keys(name) == key
        taken[f"other {n}"] = key


def test_every_key_of_a_run_is_accepted_by_mlflow_and_the_map_is_one_to_one():
    names = MEGATRON + TORCHTITAN + HOSTILE + list(SCHEMA)
    keys = MlflowKeys()
    assigned = [keys(n) for n in names]
    assert len(set(assigned)) == len(set(names))
    for name, key in zip(names, assigned):
        assert mlflow_accepts(key), (name, key)


def test_a_suffix_only_for_the_later_of_two_names_that_meet_and_keys_never_change():
    keys = MlflowKeys()
    assert keys("throughput(tps)") == "throughput_tps"
    later = keys("throughput_tps")
    assert later.startswith("throughput_tps_") and len(later) == len("throughput_tps_") + 8
    assert keys("throughput(tps)") == "throughput_tps" and keys("throughput_tps") == later
    # a run resumed from the saved map gives every name the same key, whatever order they come in
    resumed = MlflowKeys(keys.assigned())
    assert resumed("throughput_tps") == later and resumed("throughput(tps)") == "throughput_tps"


def test_param_keys_do_not_depend_on_order():
    names = ["throughput_tps", "throughput(tps)", "a%b", "a_pct_b"]
    assert mlflow_keys(names) == mlflow_keys(reversed(names))
    assert mlflow_keys(names)["throughput_tps"] == "throughput_tps"  # a name MLflow accepts keeps itself


def test_mapping_is_the_same_in_every_process():
    code = "from primus.tracking.measure.names import mlflow_key; print(mlflow_key('memory/max_reserved(%)'))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert other == mlflow_key("memory/max_reserved(%)")


# Any text, made likely to hit what the rewriting treats specially: path parts (".", "..", empty, leading "/"),
# refused characters, and MLflow's length limit falling anywhere in the name's tail.
_PART = st.one_of(st.sampled_from([".", "..", ".a", "a.", "..a", "", " ", "_", "(%)", "(GiB)", "a(b)", "ü"]),
                  st.text(st.sampled_from("./_ -%()[]@+=:\tüa") | st.characters(), max_size=6))


@st.composite
def _name(draw):
    tail = draw(st.sampled_from(["", "/"])) + "/".join(draw(st.lists(_PART, min_size=1, max_size=5)))
    cut = draw(st.integers(0, len(tail)))  # the limit falls `cut` characters into the tail, or the name is short
    return "x" * (MAX_ENTITY_KEY_LENGTH - cut) + tail if draw(st.booleans()) else tail


@example("x" * 248 + "/.a")  # cut to end in "/." (a path MLflow refuses)
@given(_name())
def test_any_name_becomes_a_key_mlflow_accepts(name):
    key = mlflow_key(name)
    assert mlflow_accepts(key), (name, key)
    assert is_valid_mlflow_key(name) <= mlflow_accepts(name)  # what we pass through unchanged, MLflow takes
    if is_valid_mlflow_key(name):
        assert key == name


@given(st.lists(_name(), unique=True, max_size=12))
def test_a_runs_keys_are_accepted_by_mlflow_one_to_one_and_kept_on_resume(names):
    keys = MlflowKeys()
    assigned = {name: keys(name) for name in names}
    assert len(set(assigned.values())) == len(names), assigned
    assert all(mlflow_accepts(key) for key in assigned.values()), assigned
    resumed = MlflowKeys(keys.assigned())
    assert {name: resumed(name) for name in reversed(names)} == assigned
    by_set = mlflow_keys(names)
    assert len(set(by_set.values())) == len(names) and all(mlflow_accepts(key) for key in by_set.values())


@pytest.mark.parametrize(("name", "key"), [
    ("a((b", "a_b"), ("(a)", "a"), ("Xa(b)X", "Xa_b_X"), ("../x(y)", "x_y"), ("a..b(c)", "a_b_c"), ("/a(b)/", "a_b"),
    ("a/./b(c)", "a/b_c"), ("ü", "metric")])
def test_rewritten_names_lose_runs_of_underscores_and_path_tricks(name, key):
    assert mlflow_key(name) == key and mlflow_accepts(key)


def test_a_later_name_at_the_length_limit_makes_room_for_its_digits_without_a_dangling_slash():
    base = "x" * 239 + "X" + "/" + "y" * 9  # 250 characters: its key is itself
    later = base + "("  # rewritten to the same key
    keys = MlflowKeys()
    assert keys(base) == base
    digest = hashlib.sha1(later.encode()).hexdigest()
    assert keys(later) == "x" * 239 + "X_" + digest[:8] and mlflow_accepts(keys(later))


def test_a_name_that_is_not_valid_unicode_still_gets_a_key_of_its_own():
    keys = MlflowKeys()
    assert keys("loss") == "loss"
    odd = "loss\ud800"  # a lone surrogate, as a JSON "\\ud800" escape decodes
    assert keys(odd) != "loss" and keys(odd).startswith("loss_") and mlflow_accepts(keys(odd))
