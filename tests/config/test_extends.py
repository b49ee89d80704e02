from pathlib import Path

from primus.config.files import load_with_extends


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_extends_deep_merges_in_order_and_replaces_lists(tmp_path):
    write(tmp_path / "base/a.yaml", "x: 1\nnested: {a: 1, b: 1}\nlst: [1, 2, 3]\n")
    write(tmp_path / "base/b.yaml", "x: 2\nnested: {b: 2}\n")
    child = write(tmp_path / "child.yaml", "extends: [base/a.yaml, base/b.yaml]\nlst: [9]\nnested: {c: 3}\n")
    tree, problems = load_with_extends(child, {})
    assert problems == []
    assert tree == {"x": 2, "nested": {"a": 1, "b": 2, "c": 3}, "lst": [9]}


def test_extends_paths_are_relative_to_the_file_naming_them(tmp_path):
    write(tmp_path / "presets/inner/leaf.yaml", "leaf: true\n")
    write(tmp_path / "presets/mid.yaml", "extends: inner/leaf.yaml\nmid: true\n")
    top = write(tmp_path / "top.yaml", "extends: presets/mid.yaml\n")
    tree, problems = load_with_extends(top, {})
    assert problems == [] and tree == {"leaf": True, "mid": True}


def test_extends_cycle_is_an_error(tmp_path):
    write(tmp_path / "a.yaml", "extends: b.yaml\n")
    write(tmp_path / "b.yaml", "extends: a.yaml\n")
    _, problems = load_with_extends(tmp_path / "a.yaml", {})
    assert len(problems) == 1 and "extends cycle a.yaml -> b.yaml -> a.yaml" in problems[0]


def test_missing_parent_and_bad_yaml_are_reported_together(tmp_path):
    write(tmp_path / "broken.yaml", "a: [1, 2\n")
    top = write(tmp_path / "top.yaml", "extends: [nope.yaml, broken.yaml]\n")
    _, problems = load_with_extends(top, {})
    assert len(problems) == 2
    assert "nope.yaml: no such file (named by" in problems[0]
    assert "broken.yaml:2:1: invalid YAML: did not find expected ',' or ']'" in problems[1]
