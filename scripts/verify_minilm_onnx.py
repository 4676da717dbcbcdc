#!/usr/bin/env python3
"""Check an exported all-MiniLM-L6-v2 ONNX model against an independent numpy forward pass.

1. Tokenizes a batch of sentences of different lengths with tokenizer.json (no built-in
   padding, truncation at 256), pads the batch itself and runs the ONNX model on onnxruntime.
2. Runs every sentence unpadded through a plain numpy (float64) BERT implementation of the
   safetensors weights and compares last_hidden_state over the real (non-padded) tokens.
3. Mean-pools + L2-normalises the ONNX output and checks the published cosine similarities.

Prints a one-line JSON summary on stdout; exits non-zero if any check fails.
Usage: verify_minilm_onnx.py --model-dir DIR [--onnx DIR/model.onnx]
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import onnxruntime as ort
from safetensors.numpy import load_file
from tokenizers import Tokenizer

MAX_ABS_DIFF = 1e-4
COSINE_TOLERANCE = 0.01
MAX_LENGTH = 256

WEATHER = "The weather is lovely today."
SUNNY = "It's so sunny outside!"
STADIUM = "He drove to the stadium."
# Published sentence-transformers similarities for all-MiniLM-L6-v2.
REFERENCE_COSINES = {
    "weather_vs_sunny": (WEATHER, SUNNY, 0.6660),
    "weather_vs_stadium": (WEATHER, STADIUM, 0.1046),
    "sunny_vs_stadium": (SUNNY, STADIUM, 0.1411),
}
SENTENCES = [
    WEATHER,
    SUNNY,
    STADIUM,
    "Hi",
    "Retrieval-augmented generation combines a search index with a language model so that "
    "answers can cite the passages they were derived from, which makes them easier to check.",
    "Rust's ownership model prevents data races at compile time.",
]


# ---------------------------------------------------------------- numpy reference

def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


class NumpyBert:
    """Straightforward BERT encoder for a single unpadded sequence, in float64."""

    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            self.cfg = json.load(f)
        raw = load_file(os.path.join(model_dir, "model.safetensors"))
        self.w = {k.removeprefix("bert."): v.astype(np.float64) for k, v in raw.items()}

    def _dense(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _ln(self, x, name):
        return _layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"], self.cfg["layer_norm_eps"])

    def __call__(self, ids, type_ids):
        cfg, w = self.cfg, self.w
        n = len(ids)
        heads = cfg["num_attention_heads"]
        d = cfg["hidden_size"] // heads
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][type_ids])
        x = self._ln(x, "embeddings.LayerNorm")
        for i in range(cfg["num_hidden_layers"]):
            p = f"encoder.layer.{i}"
            # [n, hidden] -> [heads, n, d]
            q, k, v = (self._dense(x, f"{p}.attention.self.{m}").reshape(n, heads, d).transpose(1, 0, 2)
                       for m in ("query", "key", "value"))
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            probs = scores / scores.sum(-1, keepdims=True)
            ctx = (probs @ v).transpose(1, 0, 2).reshape(n, heads * d)
            x = self._ln(self._dense(ctx, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
            h = self._dense(x, f"{p}.intermediate.dense")
            h = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))
            x = self._ln(self._dense(h, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        return x


# ---------------------------------------------------------------- onnx side

def tokenize_batch(tokenizer_path, sentences):
    tok = Tokenizer.from_file(tokenizer_path)
    tok.no_padding()  # the shipped tokenizer.json pads to a fixed 128
    tok.enable_truncation(MAX_LENGTH)
    encs = tok.encode_batch(sentences)
    width = max(len(e.ids) for e in encs)
    batch = {name: np.zeros((len(encs), width), dtype=np.int64)
             for name in ("input_ids", "attention_mask", "token_type_ids")}
    for row, e in enumerate(encs):
        n = len(e.ids)
        batch["input_ids"][row, :n] = e.ids
        batch["attention_mask"][row, :n] = 1
        batch["token_type_ids"][row, :n] = e.type_ids
    return batch


def sentence_embeddings(hidden, mask):
    m = mask[..., None].astype(np.float64)
    pooled = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", required=True, help="directory with config.json, model.safetensors, tokenizer.json")
    ap.add_argument("--onnx", help="ONNX model to check (default: MODEL_DIR/model.onnx)")
    args = ap.parse_args()
    onnx_path = args.onnx or os.path.join(args.model_dir, "model.onnx")

    batch = tokenize_batch(os.path.join(args.model_dir, "tokenizer.json"), SENTENCES)
    session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    (hidden,) = session.run(["last_hidden_state"], batch)

    reference = NumpyBert(args.model_dir)
    max_diff = 0.0
    for row in range(len(SENTENCES)):
        n = int(batch["attention_mask"][row].sum())
        expected = reference(batch["input_ids"][row, :n], batch["token_type_ids"][row, :n])
        max_diff = max(max_diff, float(np.abs(hidden[row, :n] - expected).max()))

    emb = sentence_embeddings(hidden.astype(np.float64), batch["attention_mask"])
    index = {s: i for i, s in enumerate(SENTENCES)}
    cosines, failures = {}, []
    for name, (a, b, want) in REFERENCE_COSINES.items():
        got = float(emb[index[a]] @ emb[index[b]])
        cosines[name] = round(got, 4)
        print(f"cosine {name}: {got:.4f} (reference {want:.4f})", file=sys.stderr)
        if abs(got - want) > COSINE_TOLERANCE:
            failures.append(f"cosine {name} = {got:.4f}, expected {want:.4f} ± {COSINE_TOLERANCE}")

    print(f"max |onnx - numpy| over real tokens: {max_diff:.3e} (limit {MAX_ABS_DIFF:g})", file=sys.stderr)
    if not max_diff < MAX_ABS_DIFF:
        failures.append(f"max abs diff {max_diff:.3e} >= {MAX_ABS_DIFF:g}")

    print(json.dumps({"max_abs_diff": max_diff, "cosines": cosines, "ok": not failures}))
    if failures:
        for f in failures:
            print(f"verification FAILED: {f}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
