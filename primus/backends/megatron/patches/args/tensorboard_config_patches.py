"""TensorBoard toggle and directory (spec §3): `disable_tensorboard` decides, `tensorboard_dir` only
says where. Enabled with no directory -> derived under the run directory, and said so."""

from __future__ import annotations

from pathlib import Path

from primus.backends.megatron.patches.args.notices import Notices


def tensorboard_enabled(args) -> bool:
    if args.disable_tensorboard is None:  # upstream's own rule when the toggle is not given
        return bool(args.tensorboard_dir)
    return not args.disable_tensorboard


def resolve_tensorboard_dir(args, run_dir: Path, notices: Notices) -> Path | None:
    if not tensorboard_enabled(args):
        if args.tensorboard_dir and args.disable_tensorboard:
            notices.info(f"disable_tensorboard is true: no event files are written to {args.tensorboard_dir}")
        return None
    if args.tensorboard_dir:
        return Path(args.tensorboard_dir)
    derived = run_dir / "tensorboard"
    notices.info(f"tensorboard_dir not set: TensorBoard events go to {derived}")
    return derived
