#!/usr/bin/env python3
"""Checks that a model.safetensors written by gpt2c loads in Hugging Face
transformers and gives the reference logits.

    build/gpt2c convert tests/fixtures/ref_small/model.safetensors /tmp/x/model.safetensors
    cp tests/fixtures/ref_small/config.json /tmp/x/
    python3 tools/reference/check_hf_load.py /tmp/x tests/fixtures/ref_small/reference.safetensors

Prints the max |logits - reference logits| and exits 1 above 1e-5.
"""
import sys

import torch
from safetensors.torch import load_file
from transformers import GPT2LMHeadModel


def main():
    model_dir, reference = sys.argv[1], sys.argv[2]
    model = GPT2LMHeadModel.from_pretrained(model_dir).eval()
    ref = load_file(reference)
    with torch.no_grad():
        logits = model(ref["tokens"].long()).logits
    err = (logits - ref["logits"]).abs().max().item()
    print(f"transformers loaded {model_dir}: max |logits - reference| = {err:.3g}")
    sys.exit(0 if err <= 1e-5 else 1)


if __name__ == "__main__":
    main()
