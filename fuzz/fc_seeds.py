#!/usr/bin/env python3
"""Seeds for the fc_differential target from the edge-case corpus.

Usage: python3 fuzz/fc_seeds.py [OUT_DIR]   (default fuzz/corpus/fc_differential)

One seed per corpus case (tests/data/fcontext/corpus/*): its file_contexts,
its .subs after a `%%subs` line, then its keys (decoded as the corpus README
says) separated by NUL bytes, 32 at most per seed (more seeds if needed).
Each key is also added as it is written in the keys file, ` => CONTEXT`
included: fuzzed bytes that look like that text are what found the only
divergence reported so far (corpus case pcre2_match_limit).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests/data/fcontext/corpus"
OUT = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "fuzz/corpus/fc_differential"


def decode(text):
    if text == "<empty>":
        return b""
    escapes = {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\"}
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "x":
                out += bytes([int(text[i + 2 : i + 4], 16)])
                i += 4
                continue
            if nxt in escapes:
                out += escapes[nxt]
                i += 2
                continue
        out += c.encode()
        i += 1
    return bytes(out)


OUT.mkdir(parents=True, exist_ok=True)
count = 0
for case in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
    # Its runaway spec costs PCRE2 (and libselinux) ~0.15 s per lookup, and
    # most inputs mutated from it would keep it: a slow seed, left out.
    if case.name == "pcre2_match_limit":
        continue
    text = (case / "file_contexts").read_bytes()
    subs = case / "file_contexts.subs"
    if subs.exists():
        text += b"\n%%subs\n" + subs.read_bytes()
    keys = []
    for line in (case / "keys").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        keys.append(line.encode().replace(b"\0", b""))
        keys.append(decode(re.split(r" => ", line)[0]).replace(b"\0", b""))
    for start in range(0, len(keys), 32):
        seed = text + b"".join(b"\0" + key for key in keys[start : start + 32])
        (OUT / f"{case.name}-{start // 32}").write_bytes(seed)
        count += 1
print(f"{count} seeds in {OUT}")
