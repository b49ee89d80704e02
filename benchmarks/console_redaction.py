"""Cost of the redacted console copy (``mlflow_upload_logs``): every console line is redacted on the thread
that prints it, the training thread included. Measured in thread CPU time (what the training thread pays,
whatever else the machine does), per line, for a Megatron iteration line and a line with a secret in it,
with the environment of a real job (250 variables, a few of them credentials), side by side with the
pre-cache cost (judging every variable's name for every line).

    python benchmarks/console_redaction.py [--lines N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from primus import redaction

MEGATRON_LINE = (" [2026-12-01 11:45:03.245534] iteration        1/       3 | consumed samples:            8 | "
                 "elapsed time per iteration (ms): 414.3 | learning rate: 5.000000E-04 | global batch size:     8 | "
                 "lm loss: 6.945152E+00 | loss scale: 1.0 | grad norm: 0.613 | number of skipped iterations:   0 | "
                 "number of nan iterations:   0 |\n")
SECRET_LINE = "wandb: using api_key=0123456789abcdef0123456789abcdef01234567 for https://user:hunter22@host/x\n"


def job_environment() -> None:
    for i in range(250 - len(os.environ)):
        os.environ[f"BENCH_JOB_VARIABLE_{i}"] = f"value-{i}-" + "x" * (i % 40)
    os.environ.update({"WANDB_API_KEY": "0123456789abcdef0123456789abcdef01234567", "HF_TOKEN": "hf_" + "a" * 34,
                       "DATABRICKS_TOKEN": "dapi" + "0" * 32})


def per_line_us(redact, line: str, lines: int) -> float:
    samples = []
    for _ in range(5):
        started = time.thread_time()
        for _ in range(lines):
            redact(line)
        samples.append((time.thread_time() - started) / lines * 1e6)
    return statistics.median(samples)


def uncached(text: str) -> str:
    """redact_text as it was: the environment judged again for every line, every pattern run."""
    for literal in sorted({v for k, v in os.environ.items() if v and len(v) >= 6 and redaction.is_secret_key(k)},
                          key=len, reverse=True):
        text = text.replace(literal, redaction.MASK)
    for pattern, repl in redaction._VALUE_PATTERNS:
        text = pattern.sub(repl, text)
    return redaction._ASSIGNMENT.sub(redaction._hide_assigned_secret, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    opts = parser.parse_args()
    job_environment()
    assert redaction.redact_text(SECRET_LINE) == uncached(SECRET_LINE)  # same output, or the figures mean nothing
    print(f"environment: {len(os.environ)} variables; thread CPU per line, median of 5 x {opts.lines} lines")
    print("| line | redact_text (µs) | before the cache (µs) | ratio |")
    print("|---|---|---|---|")
    for name, line in (("Megatron iteration line", MEGATRON_LINE), ("line holding secrets", SECRET_LINE)):
        now, before = per_line_us(redaction.redact_text, line, opts.lines), per_line_us(uncached, line, opts.lines)
        print(f"| {name} | {now:.1f} | {before:.1f} | {now / before:.3f} |")
    print(f"console redaction: {per_line_us(redaction.redact_text, MEGATRON_LINE, opts.lines):.1f} µs "
          f"training-thread CPU per Megatron log line")


if __name__ == "__main__":
    main()
