"""The tags every run gets from this process: the patches applied, the upstream release each judged, and
``primus.upstream.untested`` when that release is outside the supported range and was tried (warn mode)."""

from __future__ import annotations

import importlib
import importlib.metadata
import sys

import pytest

import primus.patches
from primus.patches import Patch, PatchRegistry
from primus.tracking.tags.system import system_tags
from primus.upstreams.release import UPSTREAM_CHECK_ENV, Upstream

PACKAGING = importlib.metadata.version("packaging")


@pytest.fixture
def registry(monkeypatch, tmp_path):
    """The process's registry replaced by one patching a throwaway module, gated on the installed packaging."""
    reg = PatchRegistry()
    monkeypatch.setattr(primus.patches, "REGISTRY", reg)
    (tmp_path / "tagged_upstream.py").write_text("def greet(name):\n    return name\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield reg
    reg.deactivate()
    sys.modules.pop("tagged_upstream", None)


def apply(registry, supported: str) -> None:
    install = lambda module, handle: handle.wrap(module, "greet", lambda w, i, a, k: w(*a, **k))  # noqa: E731
    registry.register(Patch("tag.greet", "tagged_upstream", Upstream("p", "packaging", "packaging", supported), "",
                            install))
    registry.activate()
    importlib.import_module("tagged_upstream")


def test_a_tried_release_outside_the_range_is_tagged_with_its_distribution_and_version(registry, monkeypatch):
    monkeypatch.setenv(UPSTREAM_CHECK_ENV, "warn")
    apply(registry, "<1")
    tags = system_tags()
    assert tags["primus.upstream.untested"] == f"packaging {PACKAGING}"
    assert tags["primus.patches"] == f"tag.greet@{PACKAGING}" and tags["primus.version.packaging"] == PACKAGING


def test_a_supported_release_has_no_untested_tag(registry, monkeypatch):
    monkeypatch.setenv(UPSTREAM_CHECK_ENV, "warn")
    apply(registry, ">=1")
    assert "primus.upstream.untested" not in system_tags()


def test_a_users_tag_with_a_system_tags_key_loses_and_is_said(tmp_path, caplog, monkeypatch):
    from primus.tracking.settings.config import TrackingConfig
    from primus.tracking.tags import system as module
    from primus.tracking.tags.meta import RunMeta

    monkeypatch.setattr(module, "git_commit", lambda: "0123abc")  # whether or not the tests run in a git checkout
    meta = RunMeta.build(TrackingConfig(run_dir=tmp_path, tags={"mlflow.source.git.commit": "mine", "team": "llm"}))
    assert (meta.tags["mlflow.source.git.commit"], meta.tags["team"]) == ("0123abc", "llm")
    assert "tag mlflow.source.git.commit='mine' is set by Primus" in caplog.text
