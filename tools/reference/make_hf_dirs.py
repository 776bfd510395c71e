#!/usr/bin/env python3
"""Write the Hugging Face model-directory fixtures (what save_pretrained
writes) that tests/test_io_hf_dir.c loads without Python:

    tests/fixtures/hf_dir/          config.json, generation_config.json, model.safetensors,
                                    reference.safetensors
    tests/fixtures/hf_dir_sharded/  the same model saved with a small max_shard_size:
                                    model.safetensors.index.json + model-0000k-of-0000n.safetensors

Usage (from the repository root):  python tools/reference/make_hf_dirs.py [--out tests/fixtures]

The model is tiny (2 layers, 2 heads, 16 channels, 24 positions, vocab 48),
seeded, float32, with noise on every parameter so that biases and layernorms
are not trivial.  reference.safetensors holds tokens / targets (I32, B x T),
the logits (B x T x V) and the mean cross-entropy loss that transformers
computes, in the layout of the ref_* fixtures.
"""

import argparse
import json
import shutil
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from transformers import GPT2Config, GPT2LMHeadModel

REPO = Path(__file__).resolve().parents[2]
CFG = dict(n_layer=2, n_head=2, n_embd=16, n_positions=24, vocab_size=48)
B, T, SEED = 2, 12, 4242


def build():
    torch.manual_seed(SEED)
    config = GPT2Config(**CFG, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                        activation_function="gelu_new", layer_norm_epsilon=1e-5,
                        tie_word_embeddings=True, bos_token_id=None, eos_token_id=None,
                        pad_token_id=None, attn_implementation="eager")
    model = GPT2LMHeadModel(config).to(torch.float32)
    g = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            std = 0.5 if name.endswith("wpe.weight") else 0.1 if p.dim() == 1 else 0.05
            p.add_(torch.randn(p.shape, generator=g, dtype=torch.float32) * std)
    return model.eval()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(REPO / "tests" / "fixtures"))
    args = ap.parse_args()
    out = Path(args.out)
    model = build()
    g = torch.Generator().manual_seed(SEED + 2)
    tokens = torch.randint(0, CFG["vocab_size"], (B, T + 1), generator=g)
    x, y = tokens[:, :T].contiguous(), tokens[:, 1:].contiguous()
    with torch.no_grad():
        logits = model(input_ids=x).logits
        loss = F.cross_entropy(logits.reshape(-1, CFG["vocab_size"]), y.reshape(-1))
    ref = {"tokens": x.to(torch.int32), "targets": y.to(torch.int32), "logits": logits.contiguous(),
           "loss": loss.reshape(1)}
    for name, shard in (("hf_dir", None), ("hf_dir_sharded", "8KB")):
        d = out / name
        if d.exists():
            shutil.rmtree(d)
        if shard:
            model.save_pretrained(d, max_shard_size=shard)
            index = json.loads((d / "model.safetensors.index.json").read_text())
            nshards = len(set(index["weight_map"].values()))
            assert nshards >= 2, f"expected several shards, got {nshards}"
        else:
            model.save_pretrained(d)
        save_file(ref, str(d / "reference.safetensors"))
        # the directory loads back in transformers and gives the same logits
        back = GPT2LMHeadModel.from_pretrained(d).eval()
        with torch.no_grad():
            err = (back(input_ids=x).logits - logits).abs().max().item()
        assert err <= 1e-5, err  # from_pretrained may pick another attention kernel
        print(f"wrote {d}: {sorted(p.name for p in d.iterdir())}")


if __name__ == "__main__":
    main()
