"""The import stand-ins of the Bridge environment (tests/support/bridge_env/bridge_stand_ins.py): the one module that
imports an absent package at its top gets a stand-in while its body runs, and nothing else sees one, so every other
``try: import transformer_engine`` still says absent (megatron-core's HAVE_TE stays False)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BRIDGE_ENV = Path(__file__).resolve().parents[2] / "support" / "bridge_env"
NEEDS = "import json\nimport absentpkg.sub as a\nfrom demo_bridge import checks\nNAME = a.Thing.__name__\nThing = a.Thing\n"
CHECKS = "try:\n    import absentpkg\n    HAVE = True\nexcept ImportError:\n    HAVE = False\n"


@pytest.fixture
def stand_ins(tmp_path, monkeypatch):
    package = tmp_path / "demo_bridge"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "needs_absent.py").write_text(NEEDS)
    (package / "checks.py").write_text(CHECKS)  # imported by needs_absent, after the absent package
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(BRIDGE_ENV))
    import bridge_stand_ins

    monkeypatch.setattr(bridge_stand_ins, "STAND_INS", {"demo_bridge.needs_absent": ("absentpkg", "absentpkg.sub")})
    finder = bridge_stand_ins.StandInFinder()
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    yield
    for name in [n for n in sys.modules if n.startswith(("demo_bridge", "absentpkg"))]:
        del sys.modules[name]


def test_only_the_module_that_needs_it_sees_the_stand_in(stand_ins):
    import demo_bridge.needs_absent as needs

    assert needs.NAME == "Thing"
    with pytest.raises(RuntimeError, match="stand-in"):
        needs.Thing()  # nothing of the absent package can really be used
    from demo_bridge import checks

    assert checks.HAVE is False  # imported before the stand-in was put in place
    assert "absentpkg" not in sys.modules
    with pytest.raises(ImportError):
        import absentpkg  # noqa: F401
