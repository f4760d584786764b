#!/usr/bin/env python3
"""Differential test: our HfTokenizer (through hf_tokenizer_jsonl) against HF `tokenizers`.

For every <dir>/tokenizer.json under --tokenizers-dir it generates --num strings from a fixed
seed (many scripts, combining marks, emoji with ZWJ and skin tones, whitespace runs with
unusual spaces, digit runs, code, the tokenizer's own added tokens inside text, words of
thousands of chars, contractions, mixed case), encodes them with and without special tokens
on both sides, decodes HF's ids (and random id sequences) with and without
skip_special_tokens on both sides, and reports every mismatch. Exit status: 0 when all agree,
1 on a mismatch, 77 (ctest's skip) when `tokenizers` is not installed.

The generated text only uses code points assigned in this Python's Unicode database
(3.11: Unicode 14): our character tables come from ICU 72 / PCRE2 10.42 while the Rust
crates behind HF `tokenizers` 0.23 follow Unicode 16, so characters assigned after 14 may be
classified differently. That is a data-version gap, not a logic one.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import unicodedata

try:
    from tokenizers import Tokenizer
except ImportError:
    print("tokenizer_diff: SKIPPED: the Python package `tokenizers` is not installed "
          "(scripts/setup.sh installs it)")
    sys.exit(77)

SCRIPTS = {
    "latin": [(0x41, 0x5A), (0x61, 0x7A), (0xC0, 0x24F), (0x1E00, 0x1EFF)],
    "cyrillic": [(0x400, 0x4FF)],
    "greek": [(0x370, 0x3FF), (0x1F00, 0x1FFF)],
    "cjk": [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x3040, 0x30FF), (0xFF00, 0xFFEF)],
    "arabic": [(0x600, 0x6FF), (0x750, 0x77F), (0xFB50, 0xFDFF)],
    "hebrew": [(0x591, 0x5F4)],
    "devanagari": [(0x900, 0x97F)],
    "thai": [(0xE00, 0xE7F)],
    "hangul": [(0xAC00, 0xD7A3), (0x1100, 0x11FF), (0x3130, 0x318F)],
    "combining": [(0x300, 0x36F), (0x1AB0, 0x1AFF), (0x20D0, 0x20FF)],
    "symbols": [(0x2000, 0x2BFF), (0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)],
    "emoji": [(0x1F300, 0x1FAFF), (0x2600, 0x27BF)],
    "astral": [(0x10000, 0x1FFFF), (0x20000, 0x2FFFF)],
    "any_bmp": [(0xA0, 0xFFFD)],
}
SPACES = [" ", "  ", "\t", "\n", "\r", "\r\n", "\n\n", " \n", "\u00a0", "\u2000", "\u2003",
          "\u2009", "\u200a", "\u3000", "\u0085", "\u2028", "\u2029", "\u202f", "\u205f",
          "\u1680", "\u000b", "\u000c", "\u200b", "\ufeff", "\u180e"]
DIGITS = ["0123456789", "٠١٢٣٤٥٦٧٨٩", "०१२३४५६७८९", "０１２３４５６７８９", "²³¹", "ⅠⅡⅢ", "½¾"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'Ve", "'D", "'M",
                "n't", "'", "''", "’s"]
WORDS = ("the of and to in is that it for was on are with as his they be at one have this "
         "from or had by hot word but what some we can out other were all there when up use "
         "your how said an each she which do their time if will way about many then them "
         "Hello World HTTP URL JSON tokenizer naïve café résumé Straße İstanbul ΣΊΣΥΦΟΣ "
         "Привет мир Москва 東京 北京大学 こんにちは 안녕하세요 مرحبا שלום नमस्ते สวัสดี").split()
CODE = [
    "def f(x):\n    return x**2  # square\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n",
    "if __name__ == '__main__':\n    main()\n",
    "const x = {a: 1, 'b': [2, 3]};   // comment\r\n",
    "<div class=\"x\">&nbsp;</div>\n",
    "SELECT * FROM t WHERE id = 42;\n",
    "   \n\n    indented\n\t\ttabs\n",
    "x := y + z; y=>z; a->b; a::b; a<=b>=c!=d==e",
    "https://example.com/path?q=1&r=two#frag",
    "\\n \\t \\\\ \"quoted\" 'single'",
    "#include <vector>\nstd::vector<int> v{1,2,3};",
    "print(f\"{x!r:>10}\")",
]
ZWJ = ["\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466", "\U0001F3F3\uFE0F\u200D\U0001F308",
       "\U0001F469\U0001F3FD\u200D\U0001F4BB", "\U0001F44D\U0001F3FB", "\U0001F44B\U0001F3FF",
       "\u2764\uFE0F", "\U0001F1FA\U0001F1F8", "\U0001F9D1\u200D\U0001F91D\u200D\U0001F9D1"]


def assigned(cp):
    c = chr(cp)
    return unicodedata.category(c) not in ("Cn", "Cs")


class Gen:
    def __init__(self, seed, added):
        self.r = random.Random(seed)
        self.added = added
        self.pools = {}

    def char(self, script):
        r = self.r
        ranges = SCRIPTS[script]
        while True:
            lo, hi = r.choice(ranges)
            cp = r.randint(lo, hi)
            if assigned(cp):
                return chr(cp)

    def word(self, script=None, n=None):
        r = self.r
        script = script or r.choice(list(SCRIPTS))
        n = n or r.choice([1, 1, 2, 3, 4, 5, 6, 8, 12])
        return "".join(self.char(script) for _ in range(n))

    def piece(self):
        r = self.r
        k = r.random()
        if k < 0.22:
            w = r.choice(WORDS)
            m = r.random()
            if m < 0.1:
                w = w.upper()
            elif m < 0.2:
                w = w.capitalize()
            elif m < 0.25:
                w = "".join(c.upper() if r.random() < 0.5 else c for c in w)
            return w
        if k < 0.40:
            return self.word()
        if k < 0.52:
            return r.choice(SPACES) * r.choice([1, 1, 1, 2, 3, 7])
        if k < 0.58:
            d = r.choice(DIGITS)
            return "".join(r.choice(d) for _ in range(r.randint(1, 9)))
        if k < 0.64:
            return r.choice(CONTRACTIONS)
        if k < 0.70 and self.added:
            return r.choice(self.added)
        if k < 0.75:
            return r.choice(ZWJ)
        if k < 0.80:
            return r.choice(CODE)
        if k < 0.85:
            return self.char("combining") * r.randint(1, 3)
        if k < 0.90:
            return r.choice("!?.,;:()[]{}<>\"'`~@#$%^&*-_+=|\\/") * r.randint(1, 4)
        return self.word("any_bmp" if r.random() < 0.7 else "astral", r.randint(1, 5))

    def text(self):
        r = self.r
        k = r.random()
        if k < 0.004:
            return ""
        if k < 0.012:  # a very long word
            script = r.choice(["latin", "cjk", "cyrillic", "emoji", "any_bmp"])
            return self.word(script, r.randint(500, 4000))
        if k < 0.016:  # a long run of one char
            return r.choice(["a", " ", "\n", "1", "é", "!", "\u3000", "ab"]) * r.randint(100, 3000)
        n = r.choice([1, 1, 2, 3, 4, 6, 8, 12, 20, 40])
        sep = r.random() < 0.7
        parts = []
        for _ in range(n):
            parts.append(self.piece())
            if sep and r.random() < 0.8:
                parts.append(" ")
        return "".join(parts)


def run_ours(binary, tok_path, requests):
    with tempfile.TemporaryFile("w+b") as f:
        for q in requests:
            f.write((json.dumps(q, ensure_ascii=True) + "\n").encode())
        f.seek(0)
        out = subprocess.run([binary, tok_path], stdin=f, capture_output=True)
    if out.returncode != 0:
        raise RuntimeError(f"{binary} failed ({out.returncode}): {out.stderr.decode()[:2000]}")
    lines = out.stdout.decode("utf-8").rstrip("\n").split("\n") if out.stdout else []
    if len(lines) != len(requests):
        raise RuntimeError(f"{binary}: {len(lines)} replies for {len(requests)} requests")
    return [json.loads(l) for l in lines]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="path to hf_tokenizer_jsonl")
    ap.add_argument("--tokenizers-dir", required=True)
    ap.add_argument("--num", type=int, default=20000, help="strings per tokenizer")
    ap.add_argument("--random-decodes", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--only", default="", help="comma-separated tokenizer names")
    ap.add_argument("--show", type=int, default=5, help="mismatches to print per kind")
    args = ap.parse_args()

    if not os.path.isdir(args.tokenizers_dir):
        print(f"tokenizer_diff: SKIPPED: {args.tokenizers_dir} does not exist")
        return 77
    names = sorted(d for d in os.listdir(args.tokenizers_dir)
                   if os.path.isfile(os.path.join(args.tokenizers_dir, d, "tokenizer.json")))
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    total_bad = 0
    for name in names:
        t0 = time.time()
        path = os.path.join(args.tokenizers_dir, name, "tokenizer.json")
        hf = Tokenizer.from_file(path)
        added = [t.content for t in hf.get_added_tokens_decoder().values()]
        gen = Gen(f"{args.seed}:{name}", added)
        texts = [gen.text() for _ in range(args.num)]
        rng = random.Random(f"{args.seed}:{name}:ids")
        vocab_size = hf.get_vocab_size(with_added_tokens=True)
        special_ids = [i for i, t in hf.get_added_tokens_decoder().items() if t.special]
        rand_ids = []
        for _ in range(args.random_decodes):
            seq = [rng.randrange(vocab_size) for _ in range(rng.randint(0, 30))]
            for _ in range(rng.randint(0, 3)):
                if special_ids:
                    seq.insert(rng.randint(0, len(seq)), rng.choice(special_ids))
            # Keep only ids HF can map (holes in the id space are skipped by both).
            rand_ids.append([i for i in seq if hf.id_to_token(i) is not None])

        hf_enc = {}
        for add in (False, True):
            hf_enc[add] = [e.ids for e in hf.encode_batch(texts, add_special_tokens=add)]
        dec_inputs = hf_enc[True] + rand_ids
        hf_dec = {skip: hf.decode_batch(dec_inputs, skip_special_tokens=skip)
                  for skip in (False, True)}

        requests = []
        for add in (False, True):
            requests += [{"op": "encode", "text": t, "add_special_tokens": add} for t in texts]
        for skip in (False, True):
            requests += [{"op": "decode", "ids": ids, "skip_special_tokens": skip}
                         for ids in dec_inputs]
        ours = run_ours(args.bin, path, requests)

        bad = {}
        i = 0
        for add in (False, True):
            key = f"encode(add_special_tokens={add})"
            for t, want in zip(texts, hf_enc[add]):
                got = ours[i]
                i += 1
                if got.get("ids") != want:
                    bad.setdefault(key, []).append((t, want, got))
        for skip in (False, True):
            key = f"decode(skip_special_tokens={skip})"
            for ids, want in zip(dec_inputs, hf_dec[skip]):
                got = ours[i]
                i += 1
                if got.get("text") != want:
                    bad.setdefault(key, []).append((ids, want, got))
        n_bad = sum(len(v) for v in bad.values())
        total_bad += n_bad
        print(f"{name}: {len(texts)} strings, {len(dec_inputs)} id sequences: "
              f"{n_bad} mismatches ({time.time() - t0:.1f}s)")
        for key, items in bad.items():
            print(f"  {key}: {len(items)} mismatches")
            for inp, want, got in items[:args.show]:
                print(f"    input={inp!r:.300}\n      hf  ={want!r:.300}\n      ours={got!r:.300}")
        sys.stdout.flush()
    print(f"tokenizer_diff: {total_bad} mismatches in total")
    return 1 if total_bad else 0


if __name__ == "__main__":
    sys.exit(main())
