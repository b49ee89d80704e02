"""`primus tracking sync RUN_DIR`: deliver to MLflow (and W&B, Comet, and plugin sinks) what a run's journal holds
and its trackers did not receive (a server that was down, an exit deadline that ran out), then set the
run's final status. A progress line per tracker (records and bytes sent) goes to stderr every few seconds.

`primus tracking stacks RUN_DIR`: have every live rank of this node that registered in the run write every
thread's Python stack to RUN_DIR/stacks/ now (as a stall does), e.g. to see where a slow job spends its time."""

from __future__ import annotations

import argparse
import sys

from primus.redaction import redact_text


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "tracking", help="tracking maintenance (sync a run's journal, save its ranks' stacks)", description=__doc__
    )
    sub = parser.add_subparsers(dest="tracking_command", required=True)
    sync = sub.add_parser(
        "sync", help="replay a run's journal into its MLflow, W&B and Comet runs", description=__doc__
    )
    sync.add_argument(
        "run_dir", help="the run directory (it holds journal/ and run.json), e.g. output/tiny_cpu/20261129-172708"
    )
    sync.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="give up after this many seconds (default 300), e.g. --timeout 1800 for a long run",
    )
    sync.add_argument(
        "--tracking-uri",
        default=None,
        help="MLflow tracking URI to use instead of the saved one (needed when it held a password), "
        "e.g. --tracking-uri http://127.0.0.1:5000",
    )
    sync.set_defaults(func=run_sync)
    stacks = sub.add_parser("stacks", help="save the stacks of a run's live ranks on this node", description=__doc__)
    stacks.add_argument("run_dir", help="the run directory, e.g. output/tiny_cpu/20261129-172708")
    stacks.set_defaults(func=run_stacks)


def run_sync(args: argparse.Namespace) -> int:
    from primus.tracking.delivery.replay import SyncError, sync_run
    from primus.tracking.journal.run_state import RunDirBusyError

    try:
        report = sync_run(args.run_dir, timeout_s=args.timeout, tracking_uri=args.tracking_uri, progress=_progress_line)
    except (SyncError, RunDirBusyError) as e:
        print(f"primus tracking sync: {redact_text(str(e))}", file=sys.stderr)
        return 2
    for sink, done in report.delivered.items():
        detail = "" if done else f" (last error: {report.errors.get(sink, 'timed out')}); run the command again"
        print(f"{sink}: {'delivered, status ' + report.status if done else 'NOT fully delivered'}{detail}")
    if not report.delivered:
        print("nothing to deliver: the run has no MLflow, W&B, Comet or plugin sink with pending records")
    if report.wandb_offline_dir:
        print(f"W&B logged this run offline; upload it with: wandb sync {report.wandb_offline_dir}")
    if report.comet_archives:
        print(
            f"Comet logged this run offline; upload it, in this order, with: comet upload {' '.join(report.comet_archives)}"
        )
    return 0 if report.ok else 1


def run_stacks(args: argparse.Namespace) -> int:
    from pathlib import Path

    from primus.tracking.health.stacks import dump_stacks
    from primus.tracking.journal.files import STACKS_DIR

    asked = dump_stacks(Path(args.run_dir), "asked by hand (primus tracking stacks)")
    if not asked:
        print(f"primus tracking stacks: no live rank of this node is registered in {args.run_dir}", file=sys.stderr)
        return 1
    print(
        f"asked {len(asked)} rank(s) (pids {', '.join(map(str, asked))}); their stacks are appended to "
        f"{Path(args.run_dir) / STACKS_DIR}/"
    )
    return 0


def _progress_line(progress) -> None:
    """``mlflow: 1200 records, 3.1 of 8.0 MiB sent``, to stderr (the results go to stdout)."""
    print(
        f"{progress.sink}: {progress.records} records, {_mib(progress.bytes_sent)} of {_mib(progress.bytes_total)} "
        f"MiB of the journal sent",
        file=sys.stderr,
        flush=True,
    )


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f}"
