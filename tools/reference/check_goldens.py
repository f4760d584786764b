#!/usr/bin/env python3
"""Checks the golden files in tests/data/golden/ and prints a summary.

    python tools/reference/check_goldens.py [tests/data/golden]

Per file: the schema, max_tokens entries per case, the chosen token is the argmax of its
top-K logprobs and token_logprobs[i] equals it, logprobs <= 0. Across files: every F32 GGUF
golden must match the golden of the same model's transformers directory (same tokens,
logprobs within 1e-4; the GGUF stores eps / rope_theta as float32, hence not bit-equal), and
quantized goldens are compared with the F32 one (agreement printed, not enforced).
Exit status 1 on any failure. Needs only the Python standard library.
"""
import glob
import json
import os
import sys

REQUIRED = ("model", "source", "generator", "transformers_version", "torch_version", "dtype",
            "max_tokens", "top_k", "cases")


def check_file(path):
    errs = []
    d = json.load(open(path))
    for k in REQUIRED:
        if k not in d:
            errs.append(f"missing key {k}")
    if errs:
        return d, errs
    if d["dtype"] != "float32":
        errs.append("dtype is not float32")
    M, K = d["max_tokens"], d["top_k"]
    for ci, c in enumerate(d["cases"]):
        for k in ("prompt_token_ids", "token_ids", "logprobs", "token_logprobs"):
            if k not in c:
                errs.append(f"case {ci}: missing {k}")
                continue
        if len(c["token_ids"]) != M or len(c["logprobs"]) != M or len(c["token_logprobs"]) != M:
            errs.append(f"case {ci}: not {M} entries")
        for i, (t, lp, tl) in enumerate(zip(c["token_ids"], c["logprobs"], c["token_logprobs"])):
            if len(lp) != K:
                errs.append(f"case {ci} step {i}: {len(lp)} logprobs, want {K}")
            best = max(lp.values())
            if lp.get(str(t)) != best or abs(tl - best) > 1e-6 or any(v > 0 for v in lp.values()):
                errs.append(f"case {ci} step {i}: token {t} is not the top logprob")
    return d, errs


def margins(d):
    out = []
    for c in d["cases"]:
        out += c.get("top1_margins", [])
    return out


def compare(a, b):
    """first divergence + max |dlogprob| over the common prefix of every case"""
    same, maxd, agree, total = True, 0.0, 0, 0
    for ca, cb in zip(a["cases"], b["cases"]):
        if ca["prompt_token_ids"] != cb["prompt_token_ids"]:
            return None
        total += len(ca["token_ids"])
        for x, y, lx, ly in zip(ca["token_ids"], cb["token_ids"], ca["token_logprobs"], cb["token_logprobs"]):
            if x != y:
                same = False
                break
            agree += 1
            maxd = max(maxd, abs(lx - ly))
    return same, maxd, agree, total


def main():
    gdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "golden")
    files = sorted(glob.glob(os.path.join(gdir, "hf-*.json")))
    if not files:
        print(f"no goldens in {gdir}")
        return 1
    bad = 0
    docs = {}
    print(f"{'file':<34} {'cases':>5} {'tokens':>6} {'mean margin':>11} {'min margin':>10}  status")
    for f in files:
        d, errs = check_file(f)
        name = os.path.basename(f)[3:-5]
        docs[name] = d
        m = margins(d)
        mean = sum(m) / len(m) if m else float("nan")
        print(f"{os.path.basename(f):<34} {len(d.get('cases', [])):>5} {d.get('max_tokens', 0):>6} "
              f"{mean:>11.3f} {min(m) if m else float('nan'):>10.4f}  {'ok' if not errs else 'FAIL'}")
        for e in errs[:10]:
            print("   ", e)
        bad += bool(errs)
    print()
    for name, d in sorted(docs.items()):
        for suffix in ("-f32", "-q8_0", "-q4_0", "-q4_1"):
            if name.endswith(suffix) and name[: -len(suffix)] in docs:
                base = name[: -len(suffix)]
                r = compare(docs[base], d)
                if r is None:
                    print(f"{name} vs {base}: different prompts")
                    bad += 1
                    continue
                same, maxd, agree, total = r
                if suffix == "-f32":
                    ok = same and maxd < 1e-4
                    bad += not ok
                    print(f"{name} vs {base}: {'same tokens' if same else 'DIFFERENT tokens'}, "
                          f"max |dlogprob| {maxd:.2e} -> {'ok' if ok else 'FAIL'}")
                else:
                    print(f"{name} vs {base}: {agree}/{total} greedy tokens agree (each case up to its first divergence)"
                          f", max |dlogprob| on the agreeing prefix {maxd:.3f} (informational)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
