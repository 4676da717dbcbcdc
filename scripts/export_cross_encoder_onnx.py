#!/usr/bin/env python3
"""Export a BERT cross-encoder (BertForSequenceClassification) from safetensors to ONNX, without torch.

The encoder is the graph of export_minilm_onnx.py; this script adds the classification head
of BertForSequenceClassification on top of it:
    pooled = tanh(pooler.dense([CLS] hidden state)); logits = classifier(pooled)
Inputs:  input_ids, attention_mask, token_type_ids  int64 [batch, sequence]
Output:  logits                                     float32 [batch, num_labels]
crag's reranker reads one logit per pair (num_labels = 1, as in ms-marco-MiniLM-L-6-v2).

Weights may be named as Hugging Face saves them ("bert.encoder...", "bert.pooler.dense...",
"classifier...") or without the "bert." prefix.

Usage: export_cross_encoder_onnx.py --model-dir DIR --out DIR/model.onnx
"""

import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_minilm_onnx import GraphBuilder, build_model, load_weights  # noqa: E402

HEAD_WEIGHTS = ("pooler.dense.weight", "pooler.dense.bias", "classifier.weight", "classifier.bias")


class HeadBuilder(GraphBuilder):
    """Builds the head's nodes with names that cannot clash with the encoder's."""

    def fresh(self, hint):
        return "head_" + super().fresh(hint)


def build_cross_encoder(cfg, weights, name):
    missing = [k for k in HEAD_WEIGHTS if k not in weights]
    if missing:
        sys.exit(f"not a sequence-classification model: missing weights {missing}")
    num_labels = weights["classifier.weight"].shape[0]

    model = build_model(cfg, weights)
    graph = model.graph
    # The encoder ends with Identity(x) -> last_hidden_state: take x and drop that output.
    (last,) = [n for n in graph.node if list(n.output) == ["last_hidden_state"]]
    hidden = last.input[0]
    graph.node.remove(last)
    del graph.output[:]

    g = HeadBuilder(weights)
    cls = g.op("Gather", [hidden, g.const("head_cls_index", np.int64(0))], axis=1)  # [B, H]
    pooled = g.op("Tanh", [g.linear(cls, "pooler.dense")])
    g.nodes.append(helper.make_node("Identity", [g.linear(pooled, "classifier")], ["logits"], name="logits"))

    graph.node.extend(g.nodes)
    graph.initializer.extend(g.initializers.values())
    graph.output.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", num_labels]))
    graph.name = name
    model.producer_name = "crag export_cross_encoder_onnx.py"
    return model


def export(model_dir, out):
    """Reads config.json + model.safetensors in model_dir and writes the ONNX model to out."""
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    weights = load_weights(os.path.join(model_dir, "model.safetensors"))
    model = build_cross_encoder(cfg, weights, os.path.basename(os.path.normpath(model_dir)))
    onnx.checker.check_model(model, full_check=True)
    # Write atomically so an interrupted export never leaves a truncated model behind.
    tmp = out + ".tmp"
    onnx.save_model(model, tmp)
    os.replace(tmp, out)
    print(f"exported {out} ({os.path.getsize(out) / 1e6:.1f} MB)", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", required=True, help="directory with config.json and model.safetensors")
    ap.add_argument("--out", required=True, help="output .onnx path")
    args = ap.parse_args()
    export(args.model_dir, args.out)


if __name__ == "__main__":
    main()
