import re
import subprocess
import sys

from primus.tracking.names import SCHEMA, is_valid_mlflow_key, mlflow_key

MEGATRON = ["lm loss", "learning-rate", "grad-norm", "loss-scale", "batch-size", "iteration-time",
            "lm loss validation", "lm loss validation ppl", "params-norm", "num-zeros", "mem-allocated-bytes"]
TORCHTITAN = ["loss_metrics/global_avg_loss", "memory/max_reserved(%)", "memory/max_reserved(GiB)", "mfu(%)",
              "throughput(tps)", "time_metrics/end_to_end(s)", "time_metrics/data_loading(%)"]
HOSTILE = ["a(b", "a)b", "a_b", "a%b", "a_pct_b", "/abs", "a//b", "a/../b", "..", ".", "x" * 300, "x" * 301, "ünï",
           "a:b", "a b", "a\tb", "a\nb", "(", ")", "%", "", "tab\t"]
MLFLOW_RULE = re.compile(r"^[/\w.\- :]*$")  # mlflow.utils.validation.validate_param_and_metric_name (POSIX)


def test_valid_names_pass_through_unchanged():
    for name in MEGATRON + list(SCHEMA):
        assert mlflow_key(name) == name


def test_every_key_is_accepted_by_mlflow_and_the_mapping_is_one_to_one():
    names = MEGATRON + TORCHTITAN + HOSTILE + list(SCHEMA)
    keys = [mlflow_key(n) for n in names]
    assert len(set(keys)) == len(set(names))
    for name, key in zip(names, keys):
        assert is_valid_mlflow_key(key) and MLFLOW_RULE.match(key), (name, key)
        assert not any(c in key for c in "()%"), key
    assert mlflow_key("mfu(%)").startswith("mfu_pct_")  # still readable


def test_mapping_is_the_same_in_every_process():
    code = "from primus.tracking.names import mlflow_key; print(mlflow_key('memory/max_reserved(%)'))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert other == mlflow_key("memory/max_reserved(%)")
