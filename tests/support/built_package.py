"""The package as users get it: the wheel and the sdist built from this checkout's files (those git tracks or would
track: a new file not yet added counts), and the environments a user's image would be — a fresh virtual environment
that sees a training stack's site-packages (torch, the trainer, the tracker clients) but not this checkout, the wheel
installed into it, not editable."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.message import Message
from email.parser import Parser
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STACKS = {  # the environments `make setup` builds, each a training stack as an image would hold it
    "torch": REPO / ".venv",  # torch, megatron-core, torchtitan, the tracker clients
    "maxtext": REPO / ".venv-maxtext",  # JAX and MaxText, the tracker clients
    "bridge": REPO / ".venv-bridge",  # an overlay of .venv with Megatron-Bridge's pins
}
# What .venv-bridge's own .pth lines add besides .venv: the import stand-ins a host without Transformer Engine needs
# (tests/support/bridge_env/bridge_stand_ins.py says why)
BRIDGE_STAND_INS = REPO / "tests" / "support" / "bridge_env"


def sh(*command: str | Path, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    """Run ``command``; a failure names it, with the end of what it printed."""
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=timeout, **kwargs)
    assert done.returncode == 0, f"{command} exited {done.returncode}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


def source_files() -> list[str]:
    """The checkout's files as git sees them: tracked, or untracked and not ignored."""
    listed = sh("git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", cwd=REPO).stdout
    return sorted(name for name in listed.split("\0") if name and (REPO / name).is_file())


def copy_of_the_sources(folder: Path) -> Path:
    """``folder`` holding only the checkout's files: a build there cannot pick up a stray file, and leaves nothing
    (build/, *.egg-info) in the checkout for a test running beside it to trip over."""
    for name in source_files():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, folder / name)
    return folder


def build_wheel(sources: Path, out: Path) -> Path:
    sh(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", out, sources)
    [built] = out.glob("primus_tracking-*.whl")
    return built


def build_sdist(sources: Path, out: Path) -> Path:
    """setuptools' own PEP 517 hook, as `python -m build --sdist` calls it (no isolated build environment: the
    offline box has setuptools already)."""
    sh(sys.executable, "-c", f"import setuptools.build_meta as b; b.build_sdist({str(out)!r})", cwd=sources)
    [built] = out.glob("primus_tracking-*.tar.gz")
    return built


def wheel_files(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


def wheel_metadata(wheel: Path) -> Message:
    """Its METADATA: Requires-Dist, Provides-Extra, Requires-Python..."""
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return Parser().parsestr(archive.read(name).decode())


def sdist_files(sdist: Path) -> list[str]:
    """Its files, relative to the sdist's top folder."""
    with tarfile.open(sdist) as archive:
        return [m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile() and "/" in m.name]


def site_packages(venv: Path) -> Path:
    [site] = (venv / "lib").glob("python3.*/site-packages")
    return site


def image(venv: Path, stack: str, *, before: tuple[Path, ...] = ()) -> Path:
    """A fresh environment at ``venv`` seeing the ``stack``'s packages (and ``before``'s, ahead of them): plain path
    lines in a .pth, so the stack's own .pth files — its editable install of this checkout among them — do not run.
    Bridge's stack is an overlay itself: its site-packages, then .venv's, then its import stand-ins."""
    sh(STACKS[stack] / "bin" / "python", "-m", "venv", venv)
    paths = [*before, site_packages(STACKS[stack])]
    lines = []
    if stack == "bridge":
        paths.append(site_packages(STACKS["torch"]))
        lines = [str(BRIDGE_STAND_INS), "import bridge_stand_ins; bridge_stand_ins.install()"]
    (site_packages(venv) / "zz-training-stack.pth").write_text("\n".join([*map(str, paths), *lines]) + "\n")
    return venv


def install(venv: Path, wheel: Path) -> Path:
    """The wheel installed into ``venv`` as a user's ``pip install`` would (not editable), nothing else with it.
    Returns where ``import primus`` finds it there (run outside the checkout)."""
    python = venv / "bin" / "python"
    sh(python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--ignore-installed", wheel)
    found = sh(python, "-c", "import primus; print(primus.__file__)", cwd=venv).stdout.strip()
    assert found.startswith(str(site_packages(venv))), f"primus imported from {found}, not the installed wheel"
    return Path(found).parent
