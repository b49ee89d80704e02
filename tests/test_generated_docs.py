"""docs/options.md and docs/metrics.md are what `python -m primus.docs_gen` generates from the code (so
they cannot drift), and every schema option is in options.md with its default: the value a module gets
from its packaged preset (read here through load_experiment), else the schema's (upstream's) default."""

from __future__ import annotations

import re

import pytest

from primus.config import load_experiment, yaml12
from primus.config.schemas import FRAMEWORKS, schema_for
from primus.config.schemas.launch import LAUNCH_SCHEMA
from primus.docs_gen import generate
from primus.tracking.measure.names import SCHEMA

OPTIONS = generate.DOCS_DIR / "options.md"
METRICS = generate.DOCS_DIR / "metrics.md"
SECTION_OF = {"megatron": "## Megatron (", "torchtitan": "## TorchTitan", "maxtext": "## MaxText",
              "megatron_bridge": "## Megatron-Bridge",
              "launch": "## The experiment's `launch:` block"}
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def documented_defaults(section_heading: str) -> dict[str, object]:
    """Parameter -> its Default cell read back as YAML, from the tables under one ``## `` heading."""
    text = OPTIONS.read_text()
    start = text.index(section_heading)
    end = text.find("\n## ", start + 1)
    rows: dict[str, object] = {}
    for line in text[start:end if end > 0 else None].splitlines():
        cells = [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(line)[1:-1]]
        if len(cells) >= 2 and cells[0].startswith("`"):
            name = cells[0].strip("`")
            assert name not in rows, f"{name} is listed twice under {section_heading}"
            rows[name] = yaml12.loads(cells[1].strip("`"))
    return rows


def preset_params(tmp_path, framework: str) -> dict[str, object]:
    experiment = tmp_path / f"{framework}.yaml"
    experiment.write_text(f"modules:\n  m:\n    framework: {framework}\n    config: pre_trainer.yaml\n")
    params = load_experiment(experiment, environ={}).modules["m"].params
    flat: dict[str, object] = {}
    for key, value in params.items():
        if isinstance(value, dict):
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def test_checked_in_docs_are_what_the_code_generates():
    for path, text in generate.generated().items():
        assert path.read_text() == text, f"{path} is stale: run python -m primus.docs_gen"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_option_is_documented_with_its_default(tmp_path, framework):
    documented = documented_defaults(SECTION_OF[framework])
    preset = preset_params(tmp_path, framework)
    schema = schema_for(framework)
    assert set(documented) == set(schema.params)
    for name, param in schema.params.items():
        expected = preset.get(name, param.default)
        expected = list(expected) if isinstance(expected, tuple) else expected
        assert documented[name] == expected, name


def test_every_launch_setting_is_documented_with_its_default():
    documented = documented_defaults(SECTION_OF["launch"])
    assert documented == {f"launch.{name}": list(p.default) if isinstance(p.default, tuple) else p.default
                          for name, p in LAUNCH_SCHEMA.params.items()}


def test_every_metric_name_of_the_schema_is_documented():
    text = METRICS.read_text()
    for name, meaning in SCHEMA.items():
        assert f"| `{name}` | {meaning} |" in text


def test_check_mode_fails_on_a_stale_file_and_names_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(generate, "DOCS_DIR", tmp_path)
    assert generate.main([]) == 0
    assert generate.main(["--check"]) == 0
    stale = tmp_path / "options.md"
    stale.write_text(stale.read_text().replace("| `log_interval` | `1` |", "| `log_interval` | `100` |"))
    assert generate.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert f"{stale} is stale" in err and "+| `log_interval` | `1` |" in err
