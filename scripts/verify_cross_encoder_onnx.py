#!/usr/bin/env python3
"""Check an exported cross-encoder ONNX model against an independent numpy forward pass.

1. Tokenizes fixed (query, passage) pairs with tokenizer.json as crag's reranker does (the
   embedder verifier's tokenize_batch): no built-in padding, pairs truncated to 256 tokens with
   the "longest_first" strategy (the query stays whole unless it is longer than half the
   room); pads the batch itself and runs the ONNX model on onnxruntime.
2. Runs every pair unpadded through a plain numpy (float64) BERT of the safetensors weights
   (verify_minilm_onnx.NumpyBert) plus the classification head, and compares the logits.
3. With --reference: writes (--write-reference) or checks the JSON fixture crag's Rust tests
   read: the pairs, their token ids and the numpy logits.

Prints a one-line JSON summary on stdout; exits non-zero if any check fails.
Usage: verify_cross_encoder_onnx.py --model-dir DIR --tokenizer tokenizer.json
           [--onnx DIR/model.onnx] [--reference DIR/reference.json [--write-reference]]
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# tokenize_batch: no built-in padding, truncation at MAX_LENGTH "longest first", padded batch.
from verify_minilm_onnx import MAX_LENGTH, NumpyBert, tokenize_batch  # noqa: E402

MAX_ABS_DIFF = 1e-4
# A stored reference must match a fresh numpy computation this closely (same code, same weights).
REFERENCE_TOLERANCE = 1e-9

LONG_PASSAGE = " ".join(
    f"Sentence {i} of a very long passage about ranking, retrieval and evaluation." for i in range(250)
)
LONG_QUERY = " ".join(f"question word{i}" for i in range(200))
PAIRS = [
    ("how does sourdough bread rise", "Sourdough bread rises because a starter of wild yeast ferments the dough."),
    ("how does sourdough bread rise", "A rocket reaches orbit when its horizontal velocity is high enough."),
    ("what is ownership in rust", "Ownership and borrowing make Rust memory safe without a garbage collector."),
    ("what is ownership in rust", "The borrow checker rejects dangling references at compile time."),
    ("Hi", "Hello there!"),
    ("Müller's naïve café — 東京", "Unicode text: Ünïcödé bröt, 日本語の検索."),
    ("a query with an empty passage", ""),
    ("long passage, cut to fit", LONG_PASSAGE),
    (LONG_QUERY, LONG_PASSAGE),
]


def numpy_logits(bert, ids, type_ids):
    """BertForSequenceClassification: tanh pooler on [CLS], then the classifier."""
    hidden = bert(np.asarray(ids), np.asarray(type_ids))
    pooled = np.tanh(bert._dense(hidden[0], "pooler.dense"))
    return bert._dense(pooled, "classifier")


def unpadded(batch):
    """The (token ids, token types) of each row of a padded batch, as plain lists."""
    lengths = batch["attention_mask"].sum(1)
    return [(batch["input_ids"][row, :n].tolist(), batch["token_type_ids"][row, :n].tolist())
            for row, n in enumerate(lengths)]


def reference_fixture(tokens, logits):
    return {
        "max_length": MAX_LENGTH,
        "pairs": [
            {"query": q, "passage": p, "input_ids": ids, "token_type_ids": types, "logit": float(l[0])}
            for (q, p), (ids, types), l in zip(PAIRS, tokens, logits)
        ],
    }


def check_reference(path, fresh):
    """Returns the ways the stored fixture at path differs from the fresh one."""
    try:
        with open(path) as f:
            stored = json.load(f)
    except (OSError, ValueError) as e:
        return [f"cannot read reference {path}: {e}"]
    if stored.get("max_length") != fresh["max_length"] or len(stored.get("pairs", [])) != len(fresh["pairs"]):
        return [f"reference {path} is for other pairs; rebuild it with --write-reference"]
    failures = []
    for i, (s, f) in enumerate(zip(stored["pairs"], fresh["pairs"])):
        if any(s[k] != f[k] for k in ("query", "passage", "input_ids", "token_type_ids")):
            failures.append(f"reference pair {i} differs in its text or tokens")
        elif not math.isclose(s["logit"], f["logit"], rel_tol=0, abs_tol=REFERENCE_TOLERANCE):
            failures.append(f"reference pair {i}: stored logit {s['logit']}, numpy gives {f['logit']}")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", required=True, help="directory with config.json and model.safetensors")
    ap.add_argument("--tokenizer", required=True, help="tokenizer.json of the model")
    ap.add_argument("--onnx", help="ONNX model to check (default: MODEL_DIR/model.onnx)")
    ap.add_argument("--reference", help="JSON fixture of pairs, token ids and numpy logits")
    ap.add_argument("--write-reference", action="store_true", help="write --reference instead of checking it")
    args = ap.parse_args()
    onnx_path = args.onnx or os.path.join(args.model_dir, "model.onnx")

    batch = tokenize_batch(args.tokenizer, PAIRS)
    session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    (onnx_logits,) = session.run(["logits"], batch)

    bert = NumpyBert(args.model_dir)
    tokens = unpadded(batch)
    expected = np.stack([numpy_logits(bert, ids, types) for ids, types in tokens])
    failures = []
    if onnx_logits.shape != expected.shape:
        failures.append(f"onnx logits have shape {onnx_logits.shape}, numpy {expected.shape}")
        max_diff = math.inf
    else:
        max_diff = float(np.abs(onnx_logits - expected).max())
    print(f"max |onnx - numpy| over {len(PAIRS)} pairs: {max_diff:.3e} (limit {MAX_ABS_DIFF:g})", file=sys.stderr)
    if not max_diff < MAX_ABS_DIFF:
        failures.append(f"max abs diff {max_diff:.3e} >= {MAX_ABS_DIFF:g}")
    spread = float(expected.max() - expected.min())
    if spread < 1e-2:
        failures.append(f"logits barely depend on the input (spread {spread:.2e}): the comparison would prove little")

    if args.reference:
        fresh = reference_fixture(tokens, expected)
        if args.write_reference:
            tmp = args.reference + ".tmp"
            with open(tmp, "w") as f:
                json.dump(fresh, f, indent=1, ensure_ascii=False)
                f.write("\n")
            os.replace(tmp, args.reference)
            print(f"wrote {args.reference}", file=sys.stderr)
        else:
            failures.extend(check_reference(args.reference, fresh))

    print(json.dumps({"max_abs_diff": max_diff, "logit_spread": spread, "ok": not failures}))
    if failures:
        for f in failures:
            print(f"verification FAILED: {f}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
