"""tiktoken's GPT-2 encoding built from local vocabulary files (no network).

    from tiktoken_gpt2 import load
    enc = load("/path/to/gpt2-tokenizer")   # encoder.json (+ vocab.bpe unused)

GPT-2's merge ranks equal the token ids, so encoder.json alone defines them."""
import json
import os

import tiktoken

PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def load(vocab_dir):
    path = os.path.join(vocab_dir, "encoder.json")
    if not os.path.exists(path):
        path = os.path.join(vocab_dir, "vocab.json")
    with open(path, encoding="utf-8") as f:
        encoder = json.load(f)
    inv = {c: b for b, c in bytes_to_unicode().items()}
    ranks = {bytes(inv[c] for c in tok): i for tok, i in encoder.items() if tok != "<|endoftext|>"}
    special = {"<|endoftext|>": encoder["<|endoftext|>"]} if "<|endoftext|>" in encoder else {}
    return tiktoken.Encoding("gpt2-local", pat_str=PAT, mergeable_ranks=ranks, special_tokens=special)
