import pytest

from primus.redaction import MASK, is_secret_key, looks_like_secret, redact_mapping, redact_text, redact_value


@pytest.mark.parametrize("name", ["WANDB_API_KEY", "wandb_api_key", "DATABRICKS_TOKEN", "HF_TOKEN", "hfToken",
                                  "MLFLOW_TRACKING_PASSWORD", "PGPASSWORD", "AWS_SECRET_ACCESS_KEY", "client_secret",
                                  "GOOGLE_APPLICATION_CREDENTIALS", "http-authorization", "db_pass", "apiKey",
                                  "AWS_ACCESS_KEY_ID", "ssh_private_key_path", "PRIMUS_ALERT_WEBHOOK",
                                  "slack_webhook_url", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_HEADERS"])
def test_secret_names(name):
    assert is_secret_key(name)


@pytest.mark.parametrize("name", ["tokenizer_type", "num_tokens", "memory_keys", "moe_token_dispatcher_type", "PWD",
                                  "apply_query_key_layer_scaling", "key_value_heads", "keyboard", "author"])
def test_ordinary_names(name):
    assert not is_secret_key(name)


@pytest.mark.parametrize("text", ["https://alice:s3cr3t@mlflow.example.com/api", "Authorization: Bearer abcdefghijkl123",
                                  "sk-proj-abcdefghijklmnop1234", "ghp_abcdefghijklmnopqrstuvwxyz0123",
                                  "hf_abcdefghijklmnopqrstuvwx", "dapi0123456789abcdef0123456789abcdef",
                                  "AKIAABCDEFGHIJKLMNOP", "hooks.slack.com/services/T0001/B0001/abcdefgh12345678"])
def test_secret_shapes_are_found_and_hidden(text):
    assert looks_like_secret(text)
    assert redact_text(text) != text


def test_url_keeps_user_and_host_but_not_password():
    assert redact_text("postgresql://bob:hunter22@db:5432/x") == f"postgresql://bob:{MASK}@db:5432/x"


def test_env_secret_values_are_hidden_anywhere(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plain-looking-value-42")
    assert redact_text("connecting with plain-looking-value-42 now") == f"connecting with {MASK} now"


def test_git_commit_ids_stay_visible():
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert redact_text(sha) == sha


def test_mapping_redacts_by_key_and_value_and_keeps_booleans():
    out = redact_mapping({"wandb_api_key": "x" * 40, "apply_query_key_layer_scaling": True,
                          "nested": {"uri": "http://u:p4ssw0rd@h"}, "hosts": ["ok", "Bearer tok3n-abcdefgh"]})
    assert out["wandb_api_key"] == MASK
    assert out["apply_query_key_layer_scaling"] is True
    assert out["nested"]["uri"] == f"http://u:{MASK}@h"
    assert out["hosts"] == ["ok", f"Bearer {MASK}"]


@pytest.mark.parametrize("text,hidden", [
    ("hf_token: abc123xyz", "abc123xyz"),
    ("export WANDB_API_KEY=0123456789abcdef", "0123456789abcdef"),
    ('{"password": "hunter2"}', "hunter2"),
    ("--db-pass=s3cr3t --lr=0.1", "s3cr3t"),
    ("client_secret = 'xyz987'", "xyz987"),
])
def test_assignments_to_secret_names_are_hidden_in_free_text(text, hidden):
    out = redact_text(text)
    assert hidden not in out and MASK in out


def test_assignments_to_ordinary_names_stay():
    text = "num_tokens: 4096 | tokenizer_type=NullTokenizer | lr: 0.001 | tokens/s/GPU: 1878.1"
    assert redact_text(text) == text


def test_a_secret_put_in_the_environment_after_a_line_was_redacted_is_hidden_in_the_next(monkeypatch):
    """The secret values of the environment are cached between lines: a change must still be seen."""
    assert redact_text("token in use: s3cr3t-value-42") == "token in use: s3cr3t-value-42"
    monkeypatch.setenv("LATE_SERVICE_TOKEN", "s3cr3t-value-42")
    assert redact_text("in use: s3cr3t-value-42") == "in use: ***"
    monkeypatch.setenv("LATE_SERVICE_TOKEN", "another-value-43")  # a changed value, same variable count
    assert redact_text("in use: s3cr3t-value-42 and another-value-43") == "in use: s3cr3t-value-42 and ***"


@pytest.mark.parametrize("text", [
    "ghp_" + "a" * 36, "Authorization: Bearer abcdefgh12345678", "https://u:pw123456@h/x", "AKIAABCDEFGHIJKLMNOP",
    "eyJhbGciOiJI.eyJzdWIiOiIx.SflKxwRJSMeK", "xoxb-1234567890-abc", "dapi" + "0" * 32, "hf_" + "b" * 30,
    "sk-proj-" + "c" * 20, "MY_PASSWORD=opensesame", "apiKey: zzzzzzzzzz",
])
def test_the_quick_pre_checks_never_skip_a_line_that_holds_a_secret(text):
    assert redact_text(text) != text


def test_a_line_holding_every_hint_and_every_secret_word_is_still_redacted():
    """The pre-checks skip a pass only when a line holds none of its hints: one that holds all of them is read."""
    from primus.redaction import _SECRET_WORDS, _SHAPE_HINTS

    every_hint = " | ".join((*_SHAPE_HINTS, *_SECRET_WORDS))  # "|": no hint reads as a token
    assert redact_text(f"ghp_{'a' * 36} | {every_hint}") == f"{MASK} | {every_hint}"
    assert redact_text(f"MY_PASSWORD=opensesame | {every_hint}") == f"MY_PASSWORD={MASK} | {every_hint}"


def test_the_environments_secrets_are_judged_once_until_it_changes(monkeypatch):
    """Judging every variable's name per console line cost ~1 ms of the training thread: the values are kept
    (the same tuple) while the environment is unchanged, and judged again when it changes."""
    from primus.redaction import _secret_env_values

    monkeypatch.setenv("CACHED_SERVICE_TOKEN", "cached-value-1")
    first = _secret_env_values()
    assert "cached-value-1" in first and _secret_env_values() is first
    monkeypatch.setenv("CACHED_SERVICE_TOKEN", "cached-value-2")
    assert "cached-value-2" in _secret_env_values() and "cached-value-1" not in _secret_env_values()


def test_a_secret_containing_another_is_hidden_whole(monkeypatch):
    monkeypatch.setenv("SHORT_TOKEN", "abc123")
    monkeypatch.setenv("LONG_TOKEN", "prefix-abc123-tail")
    assert redact_text("a prefix-abc123-tail and abc123") == f"a {MASK} and {MASK}"


def test_overlapping_secrets_leave_no_part_of_either_visible(monkeypatch):
    monkeypatch.setenv("FIRST_TOKEN", "abcdef")
    monkeypatch.setenv("SECOND_TOKEN", "defghi")
    assert redact_text("<abcdefghi>") == f"<{MASK}>"


def test_every_occurrence_of_a_secret_is_hidden_even_where_they_overlap(monkeypatch):
    monkeypatch.setenv("REPEATED_TOKEN", "tok3n!")
    monkeypatch.setenv("RUN_TOKEN", "zzzzzz")
    assert redact_text("tok3n! a tok3n! b tok3n! zzzzzzz") == f"{MASK} a {MASK} b {MASK} {MASK}"


def test_env_values_from_the_minimum_length_up_are_hidden_shorter_ones_stay(monkeypatch):
    monkeypatch.setenv("SIX_TOKEN", "q7w8e9")  # exactly the minimum: hidden
    monkeypatch.setenv("FIVE_TOKEN", "z1x2c")  # one shorter: would mask ordinary words all over the console
    monkeypatch.setenv("SIX_SETTING", "r5t6y7")  # not a secret name
    assert redact_text("q7w8e9 z1x2c r5t6y7") == f"{MASK} z1x2c r5t6y7"


def test_bytes_values_are_decoded_with_replacement_then_redacted():
    assert redact_value("note", b"\xff password=hunter22") == f"\ufffd password={MASK}"
    assert redact_value("api_key", b"raw-key-bytes") == MASK


def test_the_alert_webhook_is_hidden_wherever_it_appears(monkeypatch):
    url = "https://alerts.example.com/hook/9f8e7d6c5b4a"
    monkeypatch.setenv("PRIMUS_ALERT_WEBHOOK", url)
    assert redact_text(f"POST {url} failed") == f"POST {MASK} failed"
    assert redact_mapping({"PRIMUS_ALERT_WEBHOOK": url}) == {"PRIMUS_ALERT_WEBHOOK": MASK}
    slack = "see https://hooks.slack.com/services/T0001/B0001/abcdefgh12345678 now"
    assert redact_text(slack) == f"see https://hooks.slack.com/{MASK} now"
