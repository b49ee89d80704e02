"""Secret detection and redaction: the one place that decides what is a secret.

Every path that prints, logs params, writes a config or uploads the environment goes through
``redact_value``/``redact_text``/``redact_mapping``. Config loading uses ``is_secret_key`` and
``looks_like_secret`` to refuse secrets written into YAML. Two rules:
* by key: a name that contains PASSWORD/PASSWD/SECRET/CREDENTIAL/APIKEY/API_KEY/PRIVATE_KEY/ACCESS_KEY/WEBHOOK,
  or whose last word (split on ``_``, ``-``, ``.`` and camelCase) is KEY, TOKEN, AUTH, AUTHORIZATION,
  COOKIE, PASS or HEADERS (``OTEL_EXPORTER_OTLP_HEADERS`` carries the collector's credential), which keeps ``tokenizer_type``, ``num_tokens`` and ``moe_token_dispatcher_type`` visible (and
  the shell's ``PWD``). Only string values are redacted by key: ``apply_query_key_layer_scaling: true`` is no secret.
* by value: URLs with ``user:pass@``, ``Bearer``/``Basic`` credentials, well-known token shapes,
  ``name: value`` / ``name=value`` in free text when the name is a secret name, and the literal values of the
  secret-named environment variables of this process. A bare W&B key (40 hex) is not matched by shape, since a git
  commit id has the same shape: it is caught by its key name in config and by its value in the environment."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

MASK = "***"

# WEBHOOK: a webhook's URL is its credential (PRIMUS_ALERT_WEBHOOK, a Slack incoming webhook)
_SUBSTRINGS = (
    "PASSWORD",
    "PASSWD",
    "SECRET",
    "CREDENTIAL",
    "APIKEY",
    "API_KEY",
    "PRIVATE_KEY",
    "ACCESS_KEY",
    "WEBHOOK",
)
_LAST_WORDS = frozenset({"KEY", "TOKEN", "AUTH", "AUTHORIZATION", "COOKIE", "PASS", "HEADERS"})
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

# Shapes of credentials that are secret wherever they appear, whatever they are called.
_VALUE_PATTERNS = [
    # scheme://user:password@host -> keep the user, hide the password
    (re.compile(r"(?P<pre>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(?=@)"), r"\g<pre>" + MASK),
    (re.compile(r"\b(?P<pre>(?i:bearer|basic|token)\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\g<pre>" + MASK),
    (re.compile(r"\b(?:sk|pk|rk)-(?:proj-|live-|test-)?[A-Za-z0-9_-]{16,}"), MASK),  # OpenAI/Stripe style
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), MASK),  # GitHub
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), MASK),
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}"), MASK),  # Hugging Face
    (re.compile(r"\bdapi[0-9a-f]{32}(?:-\d+)?\b"), MASK),  # Databricks PAT
    (re.compile(r"\bA(?:KIA|SIA)[0-9A-Z]{16}\b"), MASK),  # AWS access key id
    (re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}"), MASK),  # Slack
    (re.compile(r"(?P<pre>\bhooks\.slack\.com/)[^\s\"'<>]+"), r"\g<pre>" + MASK),  # Slack webhook: its path
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), MASK),  # JWT
]
# "name: value" / "name=value" in free text (logs, YAML dumps, command lines): the value is hidden when
# the name is a secret name by the key rule above
_ASSIGNMENT = re.compile(r"""(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)(?P<sep>["']?\s*[:=]\s*["']?)(?P<value>[^\s"',;}]+)""")
_MIN_LITERAL = 6  # shorter env values ("1", "true") would redact half the console


def _words(name: str) -> list[str]:
    return [w.upper() for w in _WORD_SPLIT.split(name) if w]


def is_secret_key(name: str) -> bool:
    """True when a config key or environment variable name denotes a credential."""
    upper = name.upper()
    if any(s in upper for s in _SUBSTRINGS):
        return True
    words = _words(name)
    return bool(words) and words[-1] in _LAST_WORDS


def looks_like_secret(value: str) -> bool:
    """True when a string holds a credential by its shape (URL password, bearer token, key formats)."""
    return any(p.search(value) for p, _ in _VALUE_PATTERNS)


# A line holding none of these (in lower case) cannot match a shape above, nor name a secret in a
# ``name: value`` pair: most console lines skip those passes (substring tests cost a few µs, the eleven
# regular expressions over a Megatron log line ~70 µs of the training thread).
_SHAPE_HINTS = (
    "://",
    "bearer",
    "basic",
    "token",
    "sk-",
    "pk-",
    "rk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "hf_",
    "dapi",
    "akia",
    "asia",
    "xox",
    "hooks.slack",
    "eyj",
)
_SECRET_WORDS = tuple(word.lower() for word in (*_SUBSTRINGS, *_LAST_WORDS))


class _SecretEnvValues:
    """The literal values of this process's secret-named environment variables. Recomputed only when the
    environment changed: a console line is redacted on the training thread, and judging every variable's
    name per line cost ~1 ms."""

    def __init__(self):
        self._seen: dict | None = None
        self._values: tuple[str, ...] = ()

    def __call__(self) -> tuple[str, ...]:
        current = getattr(os.environ, "_data", os.environ)  # CPython's raw mapping; compared in C
        if current != self._seen:
            self._seen = dict(current)
            values = {v for k, v in os.environ.items() if v and len(v) >= _MIN_LITERAL and is_secret_key(k)}
            self._values = tuple(values)
        return self._values


_secret_env_values = _SecretEnvValues()


def _hide_literals(text: str, literals: tuple[str, ...]) -> str:
    """Every character of every occurrence of the literals masked, occurrences that overlap or nest merged
    into one mask: replacing one value after another would leave the part of an overlapping value outside
    the first one visible."""
    spans = []
    for literal in literals:
        start = text.find(literal)
        while start >= 0:
            spans.append((start, start + len(literal)))
            start = text.find(literal, start + 1)
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, shown_from = [], 0
    for start, end in merged:
        out += [text[shown_from:start], MASK]
        shown_from = end
    return "".join(out) + text[shown_from:]


def redact_text(text: str) -> str:
    """Hide every credential in free text: env secret values, then known shapes."""
    text = _hide_literals(text, _secret_env_values())
    lowered = text.lower()
    if any(hint in lowered for hint in _SHAPE_HINTS):
        for pattern, repl in _VALUE_PATTERNS:
            text = pattern.sub(repl, text)
    if any(word in lowered for word in _SECRET_WORDS):
        text = _ASSIGNMENT.sub(_hide_assigned_secret, text)
    return text


def _hide_assigned_secret(match: re.Match) -> str:
    if match["value"] == MASK or not is_secret_key(match["key"]):
        return match[0]
    return f"{match['key']}{match['sep']}{MASK}"


def redact_value(key: str, value: Any) -> Any:
    """Redact one config/param value given its key; non-string values pass unless nested."""
    if isinstance(value, Mapping):
        return redact_mapping(value)
    if isinstance(value, (list, tuple)):
        return type(value)(redact_value(key, v) for v in value)
    if isinstance(value, (str, bytes)):
        text = value.decode(errors="replace") if isinstance(value, bytes) else value
        if text and is_secret_key(key):
            return MASK
        return redact_text(text)
    return value


def redact_mapping(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A redacted copy of a (nested) mapping, keys kept."""
    return {k: redact_value(str(k), v) for k, v in mapping.items()}
