#!/usr/bin/env python3
"""Checks that a model directory written by gpt2c (convert IN DIR/, or
train --save DIR/) loads in Hugging Face transformers with nothing added by
hand, and gives the reference logits.

    build/gpt2c convert tests/fixtures/hf_dir_sharded /tmp/x/
    python3 tools/reference/check_hf_load.py /tmp/x tests/fixtures/hf_dir/reference.safetensors

    build/gpt2c convert tests/fixtures/ref_small/model.safetensors /tmp/y/
    python3 tools/reference/check_hf_load.py /tmp/y tests/fixtures/ref_small/reference.safetensors

Loads DIR with GPT2LMHeadModel.from_pretrained and GenerationConfig.from_pretrained
(and GPT2TokenizerFast when DIR holds vocab.json + merges.txt: it must encode
"Hello world" and decode it back). With a reference (tokens, logits) it prints
max |logits - reference logits| and exits 1 above 1e-5.
"""
import os
import sys

import torch
from safetensors.torch import load_file
from transformers import GenerationConfig, GPT2LMHeadModel, GPT2TokenizerFast


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    model_dir = sys.argv[1]
    model = GPT2LMHeadModel.from_pretrained(model_dir).eval()
    GenerationConfig.from_pretrained(model_dir)
    c = model.config
    print(f"transformers loaded {model_dir}: n_layer {c.n_layer}, n_head {c.n_head}, n_embd {c.n_embd}, "
          f"n_positions {c.n_positions}, vocab_size {c.vocab_size}")
    if os.path.exists(os.path.join(model_dir, "vocab.json")):
        tok = GPT2TokenizerFast.from_pretrained(model_dir)
        ids = tok("Hello world")["input_ids"]
        assert tok.decode(ids) == "Hello world", ids
        assert max(ids) < c.vocab_size
        print(f"tokenizer loaded: {len(tok)} ids, 'Hello world' -> {ids}")
    if len(sys.argv) == 3:
        ref = load_file(sys.argv[2])
        with torch.no_grad():
            logits = model(ref["tokens"].long()).logits
        err = (logits - ref["logits"]).abs().max().item()
        print(f"max |logits - reference| = {err:.3g} (tolerance 1e-5)")
        sys.exit(0 if err <= 1e-5 else 1)


if __name__ == "__main__":
    main()
