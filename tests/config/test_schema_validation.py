import pytest

from primus.config.schema import Param, Schema
from primus.config.schemas import schema_for
from primus.config.yaml12 import Unparsed

SCHEMA = Schema(
    "test parameter",
    [
        Param("iters", "int"),
        Param("lr", "float", nullable=True),
        Param("name", "str", nullable=True),
        Param("flag", "bool"),
        Param("style", "str", choices=("cosine", "linear")),
        Param("paths", "str", is_list=True, nullable=True),
        Param("metrics.log_freq", "int"),
        Param("metrics.enable_mlflow", "bool", primus=True),
    ],
)


def test_valid_tree_is_typed():
    typed, problems = SCHEMA.validate(
        {"iters": 3, "lr": 1, "name": None, "flag": False, "style": "cosine", "paths": "/d",
         "metrics": {"log_freq": 5}},
        "m",
    )
    assert problems == []
    assert typed["lr"] == 1.0 and isinstance(typed["lr"], float)
    assert typed["paths"] == ["/d"]  # a scalar where a list is expected becomes a one-item list
    assert typed["metrics"] == {"log_freq": 5}


def test_unparsed_text_is_typed_by_the_schema():
    tree = {"iters": Unparsed("10"), "lr": Unparsed("1e-4"), "name": Unparsed("123"), "flag": Unparsed("true"),
            "paths": Unparsed("[a, b]"), "metrics": {"log_freq": Unparsed("2")}}
    typed, problems = SCHEMA.validate(tree, "m")
    assert problems == []
    assert typed == {"iters": 10, "lr": 1e-4, "name": "123", "flag": True, "paths": ["a", "b"],
                     "metrics": {"log_freq": 2}}
    assert type(typed["name"]) is str


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("iters", 3e4, "m: iters = 30000.0: expected int, got float; write it as a whole number: 30000"),
        ("iters", True, "m: iters = True: expected int, got bool"),
        ("iters", None, "m: iters = None: expected int, null is not allowed"),
        ("lr", "fast", "m: lr = 'fast': expected float or null, got str"),
        ("flag", "yes",
         "m: flag = 'yes': expected bool (true or false), got str; YAML 1.2 booleans are true and false only"),
        ("name", 123, "m: name = 123: expected str or null, got int; quote it to make it a string: '123'"),
        ("style", "cosin", "m: style = 'cosin': expected one of ['cosine', 'linear'], not a valid choice"),
        ("paths", [1], "m: paths = [1]: expected a list of str or null, got int; quote it to make it a string: '1'"),
        ("iters", Unparsed("ten"), "m: iters = 'ten': expected int, got str"),
    ],
)
def test_wrong_type_names_key_value_and_expected_type(key, value, message):
    _, problems = SCHEMA.validate({key: value}, "m")
    assert problems == [message]


def test_unknown_keys_get_a_did_you_mean_and_every_problem_is_listed():
    _, problems = SCHEMA.validate({"iter": 1, "metrics": {"log_frq": 1}, "log_freq": 1, "zzzz": 1, "flag": 2}, "m")
    assert problems == [
        "m: iter is not a test parameter; did you mean iters?",
        "m: metrics.log_frq is not a test parameter; did you mean metrics.log_freq?",
        "m: log_freq is not a test parameter; did you mean metrics.log_freq?",
        "m: zzzz is not a test parameter; remove it or check the spelling",
        "m: flag = 2: expected bool (true or false), got int",
    ]


def test_section_must_be_a_mapping():
    _, problems = SCHEMA.validate({"metrics": 3}, "m")
    assert problems == ["m: metrics is a section; write its keys under it as a mapping"]


ANNOTATED = Schema("upstream field", [
    Param("training.dtype", "any", annotation="Literal['bfloat16', 'float32']"),
    Param("training.steps", "any", annotation="Annotated[int, Field(ge=-1)]"),
    Param("loss.loss_fn.scale", "any", annotation="float | None"),
    Param("tokenizer.pad_token", "any", annotation="str | None"),
    Param("parallelism.fqns", "any", annotation="list[list[str]] | None"),
])


def test_upstream_annotations_type_values_and_list_every_problem():
    typed, problems = ANNOTATED.validate({
        "training": {"dtype": "bfloat16", "steps": Unparsed("10")},
        "loss": {"loss_fn": {"scale": 2}},
        "tokenizer": {"pad_token": Unparsed("123")},  # text upstream wants as it is
        "parallelism": {"fqns": [["a", "b"], ["c"]]},
    }, "m")
    assert problems == []
    assert typed["training"]["steps"] == 10 and typed["tokenizer"]["pad_token"] == "123"
    assert typed["loss"]["loss_fn"]["scale"] == 2
    _, problems = ANNOTATED.validate({
        "training": {"dtype": "bf16", "steps": -2, "stepz": 3},
        "loss": {"loss_fn": {"scale": "big"}},
        "parallelism": {"fqns": [["a", 1]]},
    }, "m")
    assert problems == [
        "m: training.dtype = 'bf16': expected one of ['bfloat16', 'float32'], not a valid choice",
        "m: training.steps = -2: expected int >= -1, out of range",
        "m: training.stepz is not a upstream field; did you mean training.steps?",
        "m: loss.loss_fn.scale = 'big': expected float or null, got str",
        "m: parallelism.fqns = [['a', 1]]: expected list[list[str]] or null, got int at [0][1]",
    ]


def test_megatron_schema_types_come_from_upstream_and_primus():
    schema = schema_for("megatron")
    assert schema.params["lr"].type == "float" and schema.params["lr"].nullable
    assert schema.params["train_iters"].type == "int"
    assert schema.params["log_loss_scale_to_tensorboard"].false_flag == "--no-log-loss-scale-to-tensorboard"
    assert schema.params["attention_backend"].choices == ("flash", "fused", "unfused", "local", "auto")
    assert {"disable_mlflow", "log_avg_skip_iterations", "log_batch_size_to_tensorboard"} <= schema.primus_keys
    assert "log_interval" not in schema.primus_keys


def test_torchtitan_and_maxtext_primus_keys():
    assert schema_for("torchtitan").primus_keys == {
        "metrics.enable_mlflow", "metrics.mlflow_run_name", "metrics.mlflow_experiment_name",
        "metrics.mlflow_upload_performance_metrics", "metrics.mlflow_upload_logs", "metrics.mlflow_upload_traces",
        "metrics.mlflow_upload_tracelens_report", "metrics.primus_exit_deadline", "metrics.primus_journal_retention",
        "model.module", "model.config", "metrics.peak_tflops", "metrics.mlflow_performance_metrics_across_ranks",
        "metrics.primus_stall_after", "metrics.primus_loss_spike_mads", "metrics.primus_throughput_drop_fraction",
        "metrics.mlflow_upload_checkpoints", "metrics.primus_stragglers", "metrics.mlflow_tags",
        "metrics.mlflow_description", "metrics.wandb_tags", "metrics.wandb_notes", "metrics.primus_no_progress_restarts",
        "metrics.primus_prometheus_pushgateway", "metrics.primus_prometheus_push_interval", "metrics.primus_prometheus_port",
        "metrics.primus_goodput_windows",
        "metrics.enable_one_logger", "metrics.one_logger_project", "metrics.one_logger_run_name",
        "metrics.one_logger_async", "metrics.app_tag_run_name", "metrics.app_tag_run_version",
    }
    assert schema_for("maxtext").primus_keys == {
        "enable_mlflow", "mlflow_run_name", "mlflow_experiment_name", "mlflow_upload_performance_metrics",
        "primus_exit_deadline", "primus_journal_retention", "peak_tflops", "primus_stall_after", "primus_loss_spike_mads",
        "primus_throughput_drop_fraction", "mlflow_upload_checkpoints", "mlflow_tags", "mlflow_description",
        "wandb_tags", "wandb_notes", "primus_no_progress_restarts", "primus_prometheus_pushgateway",
        "primus_prometheus_push_interval", "primus_prometheus_port", "primus_goodput_windows",
        "wandb_tags", "wandb_notes", "primus_no_progress_restarts", "enable_one_logger", "one_logger_project",
        "one_logger_run_name", "one_logger_async", "app_tag_run_name", "app_tag_run_version",
    }
