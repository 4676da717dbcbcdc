#!/usr/bin/env python3
"""Write crag's tiny test cross-encoder: a random-weight BertForSequenceClassification.

No cross-encoder weights can be downloaded on the project's machines, so the reranker adapter
is tested against this model instead: the real interface (inputs input_ids / attention_mask /
token_type_ids, output logits [batch, 1]) and the MiniLM tokenizer's vocabulary, but 2 layers
of width 32 and weights drawn from a fixed seed. Its scores carry no meaning; they are only
compared with an independent numpy computation (verify_cross_encoder_onnx.py).

Writes OUT_DIR/config.json and OUT_DIR/model.safetensors (Hugging Face names and layout), then
exports OUT_DIR/model.onnx with export_cross_encoder_onnx.py, the exporter for real models.

Usage: make_tiny_cross_encoder.py --tokenizer tokenizer.json --out-dir DIR
"""

import argparse
import json
import os
import sys

import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_cross_encoder_onnx import export  # noqa: E402

SEED = 20240606
HIDDEN = 32
LAYERS = 2
HEADS = 2
INTERMEDIATE = 64
MAX_POSITIONS = 512
# Wider than BERT's 0.02 initialisation so that scores differ visibly between inputs.
WEIGHT_STD = 0.2
EMBEDDING_STD = 1.0


def config(vocab_size):
    return {
        "architectures": ["BertForSequenceClassification"],
        "model_type": "bert",
        "hidden_act": "gelu",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_attention_heads": HEADS,
        "num_hidden_layers": LAYERS,
        "max_position_embeddings": MAX_POSITIONS,
        "type_vocab_size": 2,
        "vocab_size": vocab_size,
        "layer_norm_eps": 1e-12,
        "position_embedding_type": "absolute",
        "pad_token_id": 0,
        "id2label": {"0": "LABEL_0"},
        "label2id": {"LABEL_0": 0},
    }


def random_weights(cfg, rng):
    """Weights named and shaped as Hugging Face's BertForSequenceClassification saves them."""
    h, i = cfg["hidden_size"], cfg["intermediate_size"]
    w = {}

    def dense(name, out_dim, in_dim):
        w[f"{name}.weight"] = rng.normal(0.0, WEIGHT_STD, (out_dim, in_dim))
        w[f"{name}.bias"] = rng.normal(0.0, WEIGHT_STD, out_dim)

    def layer_norm(name):
        w[f"{name}.weight"] = 1.0 + rng.normal(0.0, 0.1, h)
        w[f"{name}.bias"] = rng.normal(0.0, 0.1, h)

    for name, rows in (("word", cfg["vocab_size"]), ("position", cfg["max_position_embeddings"]),
                       ("token_type", cfg["type_vocab_size"])):
        w[f"bert.embeddings.{name}_embeddings.weight"] = rng.normal(0.0, EMBEDDING_STD, (rows, h))
    layer_norm("bert.embeddings.LayerNorm")
    for layer in range(cfg["num_hidden_layers"]):
        p = f"bert.encoder.layer.{layer}"
        for m in ("query", "key", "value"):
            dense(f"{p}.attention.self.{m}", h, h)
        dense(f"{p}.attention.output.dense", h, h)
        layer_norm(f"{p}.attention.output.LayerNorm")
        dense(f"{p}.intermediate.dense", i, h)
        dense(f"{p}.output.dense", h, i)
        layer_norm(f"{p}.output.LayerNorm")
    dense("bert.pooler.dense", h, h)
    dense("classifier", 1, h)
    return {k: v.astype(np.float32) for k, v in w.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizer", required=True, help="tokenizer.json whose vocabulary the model uses")
    ap.add_argument("--out-dir", required=True, help="directory to write the model into")
    args = ap.parse_args()

    vocab_size = Tokenizer.from_file(args.tokenizer).get_vocab_size()
    cfg = config(vocab_size)
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    weights = random_weights(cfg, np.random.default_rng(SEED))
    save_file(weights, os.path.join(args.out_dir, "model.safetensors"))
    export(args.out_dir, os.path.join(args.out_dir, "model.onnx"))


if __name__ == "__main__":
    main()
