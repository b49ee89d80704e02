"""The tiny tokenizer and text dataset the CPU configs train on, built on this machine: a synthetic
corpus (seeded, so every build is identical) and a byte-level BPE trained on it with ``tokenizers``.
Nothing is downloaded. Built once per cache directory; concurrent ranks each build into a private
folder and the first atomic rename wins.

Layout (what torchtitan reads): ``tokenizer/tokenizer.json`` + ``tokenizer_config.json``
(``HuggingFaceTokenizer``: bos/eos) and ``c4_test/data.json`` (JSON lines ``{"text": ...}``, loaded by
the ``c4_test`` dataset with ``datasets.load_dataset(path, split="train")``)."""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

ASSETS_ENV = "PRIMUS_TORCHTITAN_ASSETS"
VERSION = "tiny-v1"  # bump when the content changes, so old caches are not reused
VOCAB_SIZE = 2000  # at most the debug model's 2048
DOCUMENTS = 2000

_WORDS = (
    "the of and to in is was for on that with as by at from his her an it were are which this be or has had "
    "not but first one their its new after who they two have more time year during been other would all into "
    "city river school music world state team game history village county season government people family "
    "series film album band north south east west war church station university company national public house "
    "million small large early later several under over between because while where model train token data "
    "loss step batch layer weight gradient optimizer"
).split()
BOS, EOS, PAD = "<|begin_of_text|>", "<|end_of_text|>", "<|pad|>"


@dataclass(frozen=True)
class TinyAssets:
    tokenizer_dir: Path  # torchtitan's hf_assets_path
    dataset_dir: Path  # torchtitan's dataloader.dataset_path


def default_root() -> Path:
    return Path(os.environ.get(ASSETS_ENV) or Path.home() / ".cache" / "primus" / "torchtitan") / VERSION


def ensure_tiny_assets(root: Path | None = None) -> TinyAssets:
    root = Path(root) if root is not None else default_root()
    assets = TinyAssets(root / "tokenizer", root / "c4_test")
    if (root / "complete").is_file():
        return assets
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
    try:
        _build(staging)
        (staging / "complete").write_text(VERSION)
        try:
            staging.rename(root)
        except OSError:  # another process finished first
            if not (root / "complete").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return assets


def corpus(documents: int = DOCUMENTS, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    docs = []
    for _ in range(documents):
        sentences = (
            " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 18))).capitalize() + rng.choice(".!?.")
            for _ in range(rng.randint(3, 12))
        )
        docs.append(" ".join(sentences))
    return docs


def _build(out: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    docs = corpus()
    (out / "c4_test").mkdir()
    with open(out / "c4_test" / "data.json", "w") as f:
        f.writelines(json.dumps({"text": d}) + "\n" for d in docs)

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=[PAD, BOS, EOS],
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(docs, trainer=trainer)
    (out / "tokenizer").mkdir()
    tokenizer.save(str(out / "tokenizer" / "tokenizer.json"))
    settings = {
        "bos_token": BOS,
        "eos_token": EOS,
        "pad_token": PAD,
        "add_bos_token": True,
        "add_eos_token": False,
        "model_max_length": 131072,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    (out / "tokenizer" / "tokenizer_config.json").write_text(json.dumps(settings, indent=2))
