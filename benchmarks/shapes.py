"""The public GEMM shape set: the per-rank GEMMs of real models under tensor parallelism, plus odd shapes, each tagged
with the shape class it exercises. Used by `benchmarks/gemm.py --shapes models` and `python -m taxonomy sweep
--shapes models`.

Per rank, Megatron-style tensor parallelism at TP t: column-parallel QKV (N = (heads/t + 2 x max(1, kv_heads/t)) x
head_dim; K = hidden), row-parallel attention output (N = hidden, K = heads x head_dim / t), column-parallel MLP up
and gate fused (N = 2 x intermediate / t), row-parallel down (K = intermediate / t), vocabulary projection (N =
ceil(vocab / t)). MoE models (Mixtral, gpt-oss) count one expert's MLP as the dense MLP. DeepSeek-V3's dense layers:
MLA's fused q_a/kv_a down-projection (replicated), q_b and kv_b (column-parallel), o_proj (row-parallel), dense MLP.
M is the number of tokens: 1, 16 (decode), 128 ... 16384 (prefill).
"""

import math
import random

# name: (hidden, heads, kv_heads, head_dim, intermediate, vocab) from the models' published configs
MODELS = {
    "llama3-8b": (4096, 32, 8, 128, 14336, 128256),
    "llama3-70b": (8192, 64, 8, 128, 28672, 128256),
    "llama3-405b": (16384, 128, 8, 128, 53248, 128256),
    "qwen2.5-7b": (3584, 28, 4, 128, 18944, 152064),
    "qwen2.5-14b": (5120, 40, 8, 128, 13824, 152064),
    "qwen2.5-72b": (8192, 64, 8, 128, 29568, 152064),
    "mixtral-8x7b": (4096, 32, 8, 128, 14336, 32000),
    "gpt-oss-120b": (2880, 64, 8, 64, 2880, 201088),
    "deepseek-v3": (7168, 128, 128, 128, 18432, 129280),  # MLA: handled in layer_gemms
}
TP = (2, 4, 8)
TOKENS = (1, 16, 128, 1024, 4096, 16384)
# Odd shapes (M, N, K) of our choosing: widths that are not multiples of 16 (no 16-byte vector stores unless the
# kernel is told the alignment), odd M and K, primes (no TMA: rows not 16-byte aligned), Falcon's 4544, K >> M x N,
# tall-skinny and short-wide extremes.
ODD = [(4096, 3000, 4096), (3000, 4096, 4096), (4096, 4096, 3000), (2048, 5000, 2048), (4099, 4097, 4093),
       (1000, 1000, 1000), (129, 4096, 4096), (4096, 4544, 4544), (128, 128, 65536), (64, 256, 131072),
       (16384, 64, 4096), (16, 16384, 8192), (4096, 1000, 8192), (1, 4000, 4096), (333, 777, 2048)]


def layer_gemms(model, tp):
    """{layer: (N, K)} of one rank's GEMMs of `model` at tensor-parallel degree tp."""
    h, nh, nkv, d, inter, vocab = MODELS[model]
    vocab_n = -(-vocab // tp)
    if model == "deepseek-v3":  # MLA (q_lora 1536, kv_lora 512 + rope 64; q/k head 192, v head 128)
        return {"qkv_a": (1536 + 576, h), "q_b": (nh * 192 // tp, 1536), "kv_b": (nh * 256 // tp, 512),
                "attn_out": (h, nh * 128 // tp), "mlp_up": (2 * inter // tp, h), "mlp_down": (h, inter // tp),
                "vocab": (vocab_n, h)}
    qkv = (nh // tp + 2 * max(1, nkv // tp)) * d
    return {"qkv": (qkv, h), "attn_out": (h, nh * d // tp), "mlp_up": (2 * inter // tp, h),
            "mlp_down": (h, inter // tp), "vocab": (vocab_n, h)}


def shape_class(m, n, k, sms=132):
    """The class a GEMM belongs to, first match wins: decode (M < 128), k_dominant (few output tiles, K much longer than
    M and N: split-K's ground), small (< 2 GFLOP: launch and latency), tall_skinny (M >= 8 N), short_wide (N >= 8 M),
    n_edge / k_edge / m_edge (N, K or M not a multiple of 128), aligned."""
    tiles = -(-m // 128) * -(-n // 128)
    if m < 128:
        return "decode"
    if tiles < sms // 2 and k >= 8 * max(m, n):
        return "k_dominant"
    if 2 * m * n * k < 2e9:
        return "small"
    if m >= 8 * n:
        return "tall_skinny"
    if n >= 8 * m:
        return "short_wide"
    for name, v in (("n_edge", n), ("k_edge", k), ("m_edge", m)):
        if v % 128:
            return name
    return "aligned"


CLASSES = ("decode", "k_dominant", "small", "tall_skinny", "short_wide", "n_edge", "k_edge", "m_edge", "aligned")


def model_shapes(models=None, tps=TP, tokens=TOKENS, odd=True):
    """[(m, n, k, {"class", "source"})], deduplicated (a shape keeps the first model/layer that produced it)."""
    out = {}
    for model in models or MODELS:
        for tp in tps:
            for layer, (n, k) in layer_gemms(model, tp).items():
                for m in tokens:
                    out.setdefault((m, n, k), f"{model} tp{tp} {layer}")
    if odd:
        for s in ODD:
            out.setdefault(s, "odd")
    return [(m, n, k, {"class": shape_class(m, n, k), "source": src}) for (m, n, k), src in out.items()]


def sample(shapes, per_class=6, max_flop=2e12, seed=0):
    """A representative subset for a timed run: per class, up to per_class shapes of at most max_flop (2 M N K), drawn
    with a fixed seed, spread over sources (no two from one model/layer while others remain); every odd shape under the
    cap is kept."""
    rng = random.Random(seed)
    picked = [s for s in shapes if s[3]["source"] == "odd" and 2 * s[0] * s[1] * s[2] <= max_flop]
    for cls in CLASSES:
        pool = [s for s in shapes if s[3]["class"] == cls and s[3]["source"] != "odd"
                and 2 * s[0] * s[1] * s[2] <= max_flop]
        rng.shuffle(pool)
        seen, take = set(), []
        for s in pool + pool:  # second pass: repeats of a source once every source had its turn
            key = s[3]["source"].rsplit(" ", 1)[0] if len(take) < len(pool) else None
            if s in take or (key in seen and len(seen) < len({p[3]["source"].rsplit(" ", 1)[0] for p in pool})):
                continue
            seen.add(key)
            take.append(s)
            if len(take) == per_class:
                break
        picked += take
    return sorted(picked, key=lambda s: (CLASSES.index(s[3]["class"]), s[0], s[1], s[2]))


def part(shapes, spec):
    """Part "I/N" of shapes (I from 1 to N): every N-th shape from the I-th, so that the parts of a set sorted by
    model and size cost about the same time (the 721 GEMMs take 12-15 minutes on one GPU, a device call at most 10).
    None: all of them."""
    if spec is None:
        return shapes
    try:
        i, n = (int(x) for x in spec.split("/"))
    except ValueError:
        i = n = 0
    if not 1 <= i <= n:
        raise ValueError(f"--part {spec!r}; expected I/N with 1 <= I <= N (e.g. 2/3: the second of three parts)")
    return shapes[i - 1::n]


def global_shapes(tokens=(128, 1024, 4096, 16384), per_class=3, seed=0):
    """Whole-layer GEMMs (M, N, K before tensor-parallel sharding: TP 1 in layer_gemms) of the same models, sampled per
    class like `sample`: the named `models` set of `python -m taxonomy sweep`, where each op shards them over the
    ranks itself. M from 128 (rows are split over ranks by some ops)."""
    out = {}
    for model in MODELS:
        for layer, (n, k) in layer_gemms(model, 1).items():
            for m in tokens:
                out.setdefault((m, n, k), f"{model} {layer}")
    tagged = [(m, n, k, {"class": shape_class(m, n, k), "source": src}) for (m, n, k), src in out.items()]
    return [(m, n, k) for m, n, k, _ in sample(tagged, per_class=per_class, max_flop=4e12, seed=seed)]


def geomean(values):
    values = [v for v in values if v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def main():
    import argparse
    ap = argparse.ArgumentParser(description="print the public shape set (or its sample) with classes")
    ap.add_argument("--sample", action="store_true")
    args = ap.parse_args()
    shapes = model_shapes()
    chosen = sample(shapes) if args.sample else shapes
    for m, n, k, tag in chosen:
        print(f"{m}x{n}x{k}\t{tag['class']}\t{tag['source']}")
    counts = {c: sum(s[3]["class"] == c for s in chosen) for c in CLASSES}
    print(f"# {len(chosen)} of {len(shapes)} shapes; per class: {counts}")


if __name__ == "__main__":
    main()
