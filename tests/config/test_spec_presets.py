"""Every parameter of the spec's tables is in the preset the spec names, with the spec's default."""

import re
from pathlib import Path

import pytest

from primus.config import yaml12
from primus.config.files import load_with_extends
from primus.config.paths import MODULE_PRESETS_DIR
from primus.config.schemas import schema_for

SPEC = Path(__file__).resolve().parents[2] / "docs/spec-logging-and-experiment-tracking.md"
MEGATRON = MODULE_PRESETS_DIR / "megatron"
# spec section number -> (preset file, section of it the keys live in)
PRESET_OF_SECTION = {
    1: (MEGATRON / "primus_megatron_module.yaml", None),
    2: (MEGATRON / "trainer_base.yaml", None),
    3: (MEGATRON / "trainer_base.yaml", None),
    4: (MEGATRON / "trainer_base.yaml", None),
    5: (MEGATRON / "primus_megatron_module.yaml", None),
    6: (MEGATRON / "trainer_base.yaml", None),
    7: (MODULE_PRESETS_DIR / "torchtitan/pre_trainer.yaml", "metrics"),
    8: (MODULE_PRESETS_DIR / "maxtext/pre_trainer.yaml", None),
}
PRE_TRAINER_SETS = re.compile(r"`pre_trainer\.yaml` sets `([^`]*)`")


def spec_rows() -> list[tuple[int, str, object, object]]:
    """(section, parameter, default, pre_trainer.yaml value or None) for every parameter the spec names."""
    rows, section = [], 0
    in_yaml_block = False
    for line in SPEC.read_text().splitlines():
        if m := re.match(r"## (\d+)\.", line):
            section = int(m.group(1))
        if line.startswith("```"):
            in_yaml_block = not in_yaml_block and line.strip() == "```yaml"
        elif in_yaml_block and section == 1:  # section 1 gives its defaults as a YAML block
            key, value = line.split(":", 1)
            rows.append((section, key.strip(), yaml12.loads(value), None))
        elif line.startswith("| `"):
            names, defaults = (cell.strip() for cell in line.split("|")[1:3])
            pre_trainer = PRE_TRAINER_SETS.search(defaults)
            values = re.findall(r"`([^`]*)`", defaults.split("(")[0])
            for name, value in zip(re.findall(r"`([^`]*)`", names), values, strict=True):
                rows.append((section, name, yaml12.loads(value), pre_trainer and yaml12.loads(pre_trainer.group(1))))
    # section 8 names its one parameter in prose
    rows.append((8, "log_period", 100, None))
    return rows


ROWS = spec_rows()


def test_spec_parsing_found_every_section():
    assert {section for section, *_ in ROWS} == set(PRESET_OF_SECTION)
    assert len(ROWS) == 3 + 10 + 10 + 4 + 6 + 6 + 6 + 1


@pytest.mark.parametrize("section, name, default, pre_trainer", ROWS, ids=[r[1] for r in ROWS])
def test_preset_holds_the_spec_default(section, name, default, pre_trainer):
    path, subsection = PRESET_OF_SECTION[section]
    preset = yaml12.load_file(path)
    preset = preset[subsection] if subsection else preset
    assert name in preset, f"{name} missing from {path.name}"
    assert preset[name] == default and type(preset[name]) is type(default)


def test_megatron_pre_trainer_resolves_every_spec_parameter_with_its_overrides():
    resolved, problems = load_with_extends(MEGATRON / "pre_trainer.yaml", {})
    assert problems == []
    typed, problems = schema_for("megatron").validate(resolved, "pre_trainer.yaml")
    assert problems == []
    for section, name, default, pre_trainer in ROWS:
        if section <= 6:
            expected = default if pre_trainer is None else pre_trainer
            assert typed[name] == expected, name
    assert (typed["log_interval"], typed["log_throughput"]) == (1, True)


@pytest.mark.parametrize("framework", ["torchtitan", "maxtext"])
def test_other_presets_validate_and_add_the_mlflow_switches(framework):
    tree, problems = load_with_extends(MODULE_PRESETS_DIR / framework / "pre_trainer.yaml", {})
    typed, found = schema_for(framework).validate(tree, framework)
    assert problems == found == []
    section = typed["metrics"] if framework == "torchtitan" else typed
    assert section["enable_mlflow"] is False and section["mlflow_upload_performance_metrics"] is False
    assert section["mlflow_run_name"] is None and section["mlflow_experiment_name"] is None
