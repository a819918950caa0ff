# GPU harness for the CUDA kernel families: loads emitted candidates (.so built from the .cu files that
# tests/gpu/emit_sources writes), checks them against float64 torch references (relative error, NaN positions,
# every output written, identical reruns, odd shapes for the fallback paths) and times them with
# triton.testing.do_bench (L2 flushed before each launch, median), next to torch eager and the anchors
# (/work/shared/bench/ANCHORS.md: eager, torch.compile, bandwidth floor on an H200).
# Usage: python3 family_bench.py SRC_DIR SO_DIR [OUT_DIR] [--cases a,b] [--compile[=mode,mode]]
#   SRC_DIR holds manifest.json and the .cu files; missing .so files are built into SO_DIR with nvcc.
#   --compile also times torch.compile of each case's eager function in the same process (default and
#   max-autotune-no-cudagraphs unless modes are named), cold and hot, instead of taking ANCHORS.md's number.
import ctypes, json, os, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn.functional as F
from triton.testing import do_bench

bf, f16, f32 = torch.bfloat16, torch.float16, torch.float32
DTYPE_CODE = {f32: 0, f16: 1, bf: 2, torch.float64: 3, torch.int32: 4, torch.int64: 5, torch.uint8: 6}
BW = 4.25e12  # copy bandwidth (read + write), ANCHORS.md

class KfTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("shape", ctypes.c_int64 * 8), ("stride", ctypes.c_int64 * 8)]

def kf_tensor(t):
    k = KfTensor()
    k.data, k.dtype, k.ndim = t.data_ptr(), DTYPE_CODE[t.dtype], t.dim()
    for i, (s, st) in enumerate(zip(t.shape, t.stride())):
        k.shape[i], k.stride[i] = s, st
    return k

def randn(*shape, dtype=bf, std=1.0, cl=False):
    x = (torch.randn(*shape, device="cuda", dtype=f32) * std).to(dtype)
    return x.contiguous(memory_format=torch.channels_last) if cl else x

# ---- the cases: inputs, eager function (also gives the output shapes/dtypes), float64 reference ----
def softmax_case(shape, eager, ref, odd_shapes, std=1.0):
    return dict(make=lambda s=shape: [randn(*s, std=std)], eager=eager, ref=ref,
                odd=[(lambda s=s: [randn(*s, std=std)]) for s in odd_shapes])

def gemma(x): return torch.softmax(torch.tanh(x / 50.0) * 50.0, dim=-1, dtype=f32).to(bf)
def gemma_ref(x): return torch.softmax(torch.tanh(x.double() / 50.0) * 50.0, dim=-1)
def vocab(x): return torch.softmax(torch.tanh(x.float() / 30.0) * 30.0, dim=-1)
def vocab_ref(x): return torch.softmax(torch.tanh(x.double() / 30.0) * 30.0, dim=-1)
def topk(x):
    r = torch.topk(torch.softmax(x, dim=-1, dtype=f32), 8, dim=-1)
    return [r.values, r.indices]

def gn_case(c, hw, silu, big_odd=False, n=1, dtype=bf, eps=1e-6, cl=False):
    def make(c=c, hw=hw):
        return [randn(n, c, hw, hw, dtype=dtype, cl=cl), randn(c, dtype=dtype), randn(c, dtype=dtype)]
    def eager(x, w, b):
        y = F.group_norm(x, 32, w, b, eps)
        return F.silu(y) if silu else y
    def ref(x, w, b):
        y = F.group_norm(x.double(), 32, w.double(), b.double(), eps)
        return F.silu(y) if silu else y
    odd = [lambda: [randn(2, 64, 9, 7, dtype=dtype, cl=cl), randn(64, dtype=dtype), randn(64, dtype=dtype)],
           lambda: [randn(3, 96, 5, 5, dtype=dtype, cl=cl), randn(96, dtype=dtype), randn(96, dtype=dtype)]]
    if big_odd:  # 32 MiB groups: more than all SMs' shared memory holds (strategy=team re-reads the rest)
        odd.append(lambda: [randn(1, 32, 4096, 4096, dtype=dtype), randn(32, dtype=dtype), randn(32, dtype=dtype)])
    return dict(make=make, eager=eager, ref=ref, odd=odd)

def window_case(shape, dtype, cl, fn, odd_shapes):
    """A pooling: fn(x) on x, and on x in float64 for the reference; odd shapes for the fallback paths."""
    return dict(make=lambda: [randn(*shape, dtype=dtype, cl=cl)], eager=fn, ref=lambda x: fn(x.double()),
                odd=[(lambda s=s: [randn(*s, dtype=dtype, cl=cl)]) for s in odd_shapes])

def pool_case(n, cl):  # ResNet-50's head: global average pooling, then flatten (pool_cuda)
    return window_case((n, 2048, 7, 7), f16, cl, lambda x: torch.flatten(F.adaptive_avg_pool2d(x, 1), 1),
                       [(3, 100, 5, 5), (2, 37, 9, 11)])

def causal(s):
    return torch.full((s, s), float("-inf"), device="cuda").triu(1).view(1, 1, s, s).to(f16)

def gpt2_case(b, s):  # torch.softmax(x * 0.125 + causal mask, -1), fp16 (gpt2-attn-softmax)
    make = lambda b=b, s=s: [randn(b, 12, s, s, dtype=f16, std=4.0), causal(s)]
    return dict(make=make, eager=lambda x, m: torch.softmax(x * 0.125 + m, -1),
                ref=lambda x, m: torch.softmax(x.double() * 0.125 + m.double(), -1),
                odd=[lambda: [randn(1, 3, 77, 77, dtype=f16, std=4.0), causal(77)]])

def t5_case(b, s):  # torch.softmax(x + relative-position bias, -1, dtype=float32), bf16 scores (T5-base, 12 heads)
    make = lambda b=b, s=s: [randn(b, 12, s, s, std=3.0), randn(1, 12, s, s, std=2.0)]
    return dict(make=make, eager=lambda x, m: torch.softmax(x + m, -1, dtype=f32),
                ref=lambda x, m: torch.softmax(x.double() + m.double(), -1),
                odd=[lambda: [randn(2, 12, 33, 33, std=3.0), randn(1, 12, 33, 33, std=2.0)]])

def ln_case(b, t, h, dtype=f16, eps=1e-12):  # F.layer_norm over the hidden dim (BERT-base: 768, eps 1e-12)
    def make():
        return [randn(b, t, h, dtype=dtype), (1 + 0.1 * torch.randn(h, device="cuda")).to(dtype),
                randn(h, dtype=dtype, std=0.1)]
    odd = lambda: [randn(3, 5, h, dtype=dtype), randn(h, dtype=dtype), randn(h, dtype=dtype)]  # 15 rows
    return dict(make=make, eager=lambda x, w, bb: F.layer_norm(x, [h], w, bb, eps),
                ref=lambda x, w, bb: F.layer_norm(x.double(), [h], w.double(), bb.double(), eps), odd=[odd])

def glu_case(t, n, act):  # act(gate) * up, bf16 (llama3-8b-swiglu, gemma2-2b-geglu)
    f = (lambda g: F.silu(g)) if act == "silu" else (lambda g: F.gelu(g, approximate="tanh"))
    return dict(make=lambda: [randn(t, n), randn(t, n)], eager=lambda g, u: f(g) * u,
                ref=lambda g, u: f(g.double()) * u.double(), odd=[lambda: [randn(3, 1001), randn(3, 1001)]])

CASES = {
    "softmax_gemma_attn_2048": softmax_case((1, 8, 2048, 2048), gemma, gemma_ref, [(2, 3, 1001), (5, 1000)], std=3.0),
    "softmax_plain_bf16_2048": softmax_case((1, 8, 2048, 2048), lambda x: torch.softmax(x, -1),
                                            lambda x: torch.softmax(x.double(), -1), [(2, 3, 1001), (7, 5000)]),
    "softmax_gemma_attn_4096": softmax_case((1, 8, 4096, 4096), gemma, gemma_ref, [(2, 3, 1001), (3, 9000)], std=3.0),
    "softmax_plain_bf16_4096": softmax_case((1, 8, 4096, 4096), lambda x: torch.softmax(x, -1),
                                            lambda x: torch.softmax(x.double(), -1), [(2, 3, 1001)]),
    "softmax_gemma_vocab": softmax_case((8, 262144), vocab, vocab_ref, [(3, 100003), (2, 1000)]),
    "router_softmax_qwen": softmax_case((4096, 256), lambda x: torch.softmax(x, -1, dtype=f32),
                                        lambda x: torch.softmax(x.double(), -1), [(33, 250), (5, 3000)]),
    "router_softmax_topk_qwen": softmax_case((4096, 256), topk, lambda x: torch.softmax(x.double(), -1),
                                             [(33, 250), (5, 3000)]),
    "groupnorm_sd35_512x128": gn_case(512, 128, False),
    "groupnorm_silu_sd35_512x128": gn_case(512, 128, True),
    "groupnorm_silu_sd35_256x512": gn_case(256, 512, True),
    "groupnorm_silu_sd35_128x1024": gn_case(128, 1024, True, big_odd=True),
    "groupnorm_sd35_256x512": gn_case(256, 512, False),
    "groupnorm_sd35_128x1024": gn_case(128, 1024, False),
    # sdxl-unet-groupnorm-silu (GENERAL.md): fp16, batch 2, eps 1e-5; tensors of 5 and 21 MB (within L2)
    "groupnorm_silu_sdxl_1280x32": gn_case(1280, 32, True, n=2, dtype=f16, eps=1e-5),
    "groupnorm_silu_sdxl_320x128": gn_case(320, 128, True, n=2, dtype=f16, eps=1e-5),
    "avgpool_resnet50_n32": pool_case(32, False),
    "avgpool_resnet50_n32_cl": pool_case(32, True),
    "avgpool_resnet50_n1": pool_case(1, False),
    "avgpool_resnet50_n1_cl": pool_case(1, True),
    # windowed pooling (adaptive_pool_cuda): DenseNet's transition, VGG's head, Inception's pool branch, ResNet's stem
    "avgpool2_densenet_n32": window_case((32, 128, 56, 56), f16, False, lambda x: F.avg_pool2d(x, 2),
                                         [(3, 7, 13, 11), (2, 3, 56, 56)]),
    "adaptive7_vgg_n32": window_case((32, 512, 14, 14), f16, False, lambda x: F.adaptive_avg_pool2d(x, 7),
                                     [(2, 5, 9, 11), (3, 4, 14, 14)]),
    "avgpool3_inception_cl_n32": window_case((32, 288, 35, 35), bf, True,
                                             lambda x: F.avg_pool2d(x, 3, 1, 1, count_include_pad=False),
                                             [(2, 24, 9, 6), (1, 40, 35, 35)]),
    "maxpool3s2_resnet_cl_n32": window_case((32, 64, 112, 112), f16, True, lambda x: F.max_pool2d(x, 3, 2, 1),
                                            [(2, 64, 15, 9), (1, 24, 7, 7)]),
    "softmax_gpt2_b1_s128": gpt2_case(1, 128),
    "softmax_t5_bias_b16": t5_case(16, 512),
    "layernorm_bert_b32": ln_case(32, 512, 768),
    # SD-UNet mid-resolution GroupNorm + SiLU on channels_last fp16 (group_norm_nhwc_cuda)
    "groupnorm_silu_unet_cl_640x64": gn_case(640, 64, True, n=2, dtype=f16, eps=1e-5, cl=True),
    "groupnorm_silu_unet_cl_640x16": gn_case(640, 16, True, n=2, dtype=f16, eps=1e-5, cl=True),
    "softmax_gpt2_b4_s1024": gpt2_case(4, 1024),
    "swiglu_llama3_t1": glu_case(1, 14336, "silu"),
    "swiglu_llama3_t64": glu_case(64, 14336, "silu"),
    "geglu_gemma2_t4096": glu_case(4096, 9216, "gelu"),
    "logsoftmax_llama3_t512": softmax_case((512, 128256), lambda x: torch.log_softmax(x, -1, dtype=f32),
                                           lambda x: torch.log_softmax(x.double(), -1), [(3, 100003), (2, 1000)],
                                           std=2.0),
}
# eager, compile, floor (us) from ANCHORS.md
ANCHORS = {
    "avgpool_resnet50_n32": (20.3, 10.6, 1.54), "avgpool_resnet50_n32_cl": (13.6, 7.5, 1.54),
    "avgpool_resnet50_n1": (5.6, 9.4, 0.05), "avgpool_resnet50_n1_cl": (11.6, 47.4, 0.05),
    "groupnorm_sd35_512x128": (240.6, 43.5, 7.89), "groupnorm_silu_sd35_512x128": (251.8, 48.2, 7.89),
    "groupnorm_sd35_256x512": (1842.8, 175.5, 63.13), "groupnorm_silu_sd35_256x512": (1909.8, 177.2, 63.13),
    "groupnorm_sd35_128x1024": (3645.5, 301.9, 126.27), "groupnorm_silu_sd35_128x1024": (3786.4, 304.0, 126.27),
    "softmax_gemma_attn_2048": (330.0, 81.9, 31.57), "softmax_plain_bf16_2048": (77.6, 70.2, 31.57),
    "softmax_gemma_attn_4096": (1366.0, 300.9, 126.27), "softmax_plain_bf16_4096": (418.3, 249.2, 126.27),
    "softmax_gemma_vocab": (91.0, 51.5, 2.96), "router_softmax_qwen": (12.2, 6.0, 1.48),
    "router_softmax_topk_qwen": (79.3, 75.4, 0.52),
    # suite cases (GENERAL.md): eager and torch.compile come from --compile; floors are bytes / BW
    "groupnorm_silu_sdxl_1280x32": (0, 0, 2.47), "groupnorm_silu_sdxl_320x128": (0, 0, 9.87),
    "softmax_gpt2_b1_s128": (0, 0, 0.19), "softmax_gpt2_b4_s1024": (0, 0, 47.86),
    "swiglu_llama3_t1": (0, 0, 0.02), "swiglu_llama3_t64": (0, 0, 1.3), "geglu_gemma2_t4096": (0, 0, 53.29),
    "logsoftmax_llama3_t512": (0, 0, 92.7),
    # windowed pooling: (input + output bytes) / BW
    "avgpool2_densenet_n32": (0, 0, 7.55), "adaptive7_vgg_n32": (0, 0, 1.89),
    "avgpool3_inception_cl_n32": (0, 0, 10.63), "maxpool3s2_resnet_cl_n32": (0, 0, 15.11),
}
TOL = {bf: (1.6e-2, 1e-3), f16: (2e-3, 1e-4), f32: (1e-4, 1e-6)}

def as_list(o):
    return list(o) if isinstance(o, (list, tuple)) else [o]

def launch(lib, ins, outs, stream):
    ti = (KfTensor * len(ins))(*[kf_tensor(t) for t in ins])
    to = (KfTensor * len(outs))(*[kf_tensor(t) for t in outs])
    return lib.kf_launch(ti, len(ins), to, len(outs), ctypes.c_void_p(stream))

def graph_of(fn, n):
    """A CUDA graph of n launches of fn (warmed on a side stream first), replayed once."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    g.replay()
    torch.cuda.synchronize()
    return g

def timed_us(work):
    """One call of work between CUDA events, in us."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    work()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3

def hot_us(fn, n=50):
    """Per launch inside a CUDA graph of n launches (L2 warm, no launch gaps): kforge's `hot` series."""
    g = graph_of(fn, n)
    times = sorted(timed_us(g.replay) / n for _ in range(25))
    return times[len(times) // 2]

def check(lib, case, ins):
    """Returns (ok, message, max relative error)."""
    expect = as_list(case["eager"](*ins))
    ref = case["ref"](*ins)
    outs = [torch.full_like(e, float("nan")) if e.is_floating_point() else torch.full_like(e, -7) for e in expect]
    before = [t.clone() for t in ins]
    rc = launch(lib, ins, outs, torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    if rc != 0:
        return False, f"kf_launch returned {rc}", None
    if any(not torch.equal(a, b) for a, b in zip(ins, before)):
        return False, "inputs modified", None
    vals = outs[0]
    if len(expect) == 2:  # top-k: values match the reference gathered at the returned indices
        if (outs[1] < 0).any():
            return False, "indices not written", None
        refv = torch.topk(ref, vals.shape[-1], dim=-1).values
        got = ref.gather(-1, outs[1])
        if not torch.allclose(got, refv, rtol=1e-5, atol=1e-9):
            return False, "top-k indices wrong", None
        ref = refv
    if torch.isnan(vals).any() != torch.isnan(ref).any() or not torch.equal(torch.isnan(vals), torch.isnan(ref)):
        return False, f"NaN positions differ ({int(torch.isnan(vals).sum())} NaN out, {int(torch.isnan(ref).sum())} ref)", None
    rtol, atol = TOL[vals.dtype]
    d = (vals.double() - ref).abs()
    bad = d > atol + rtol * ref.abs()
    rel = ((vals.double() - ref).norm() / ref.norm()).item()
    if bad.any():
        i = int(bad.flatten().nonzero()[0])
        return False, f"{int(bad.sum())} elements out of tolerance (first at {i}: {vals.flatten()[i].item()} vs {ref.flatten()[i].item()}), rel {rel:.2e}", rel
    again = [torch.full_like(o, float("nan")) if o.is_floating_point() else torch.full_like(o, -7) for o in outs]
    launch(lib, ins, again, torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    if any(not torch.equal(a, b) for a, b in zip(outs, again)):
        return False, "rerun differs (race?)", rel
    return True, "ok", rel

def compile_modes(argv):
    """The torch.compile modes asked for by --compile[=mode,mode] (both by default), [] without the flag."""
    modes = []
    for a in argv:
        if a.startswith("--compile"):
            modes = (a.split("=", 1)[1] if "=" in a else "default,max-autotune-no-cudagraphs").split(",")
    return modes

def compiled(case, mode):
    """A fresh torch.compile of the case's eager function (static shapes), not yet run."""
    torch._dynamo.reset()
    return torch.compile(case["eager"], mode=mode, dynamic=False)

def timed_compile(case, ins, modes, name):
    """torch.compile of the case's eager function per mode: {mode: {us, hot_us}}, timed as the variants are."""
    out = {}
    for mode in modes:
        fn = compiled(case, mode)
        fn(*ins)
        us = do_bench(lambda: fn(*ins), warmup=10, rep=60, return_mode="median") * 1e3
        out[mode] = {"us": us, "hot_us": hot_us(lambda: fn(*ins)) if us < 30 else None}
        hot = f" hot {out[mode]['hot_us']:.2f}us" if out[mode]["hot_us"] else ""
        print(name, f"compile[{mode}]", f"{us:.2f}us{hot}", flush=True)
    return out

def build(src_dir, so_dir, names):
    inc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib", "exec")
    def one(n):
        so = os.path.join(so_dir, n[:-3] + ".so")
        if os.path.exists(so):
            return n, None
        # -cudart shared, as kforge builds candidates: one CUDA runtime for torch and every candidate (with a
        # static runtime per .so, team launches of group_norm_cuda failed after the first candidate's).
        r = subprocess.run(["nvcc", "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared",
                            "-diag-suppress", "177",
                            "-gencode=arch=compute_90a,code=sm_90a", "-I", inc, "-I", src_dir, "-o", so,
                            os.path.join(src_dir, n)], capture_output=True, text=True)
        return n, (r.stderr[-2000:] if r.returncode else None)
    with ThreadPoolExecutor(os.cpu_count() or 4) as ex:
        return {n: e for n, e in ex.map(one, names) if e}

def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    src_dir, so_dir = args[0], args[1]
    out_dir = args[2] if len(args) > 2 else "."
    only, modes = None, compile_modes(sys.argv[1:])
    for a in sys.argv[1:]:
        if a.startswith("--cases="):
            only = set(a.split("=", 1)[1].split(","))
    manifest = json.load(open(os.path.join(src_dir, "manifest.json")))
    os.makedirs(so_dir, exist_ok=True)
    files = [e["file"] for k, v in manifest.items() if only is None or k in only for e in v if "file" in e]
    t0 = time.time()
    errors = build(src_dir, so_dir, files)
    print(f"built in {time.time() - t0:.0f}s; {len(errors)} failed", flush=True)
    for n, e in errors.items():
        print("BUILD FAIL", n, e, flush=True)
    torch.manual_seed(0)
    results, table = {}, []
    for name, variants in manifest.items():
        if only and name not in only or name not in CASES:
            continue
        case = CASES[name]
        ins = case["make"]()
        odd = [mk() for mk in case["odd"]]
        eager_us = do_bench(lambda: case["eager"](*ins), warmup=10, rep=50, return_mode="median") * 1e3
        eager_hot = hot_us(lambda: case["eager"](*ins)) if eager_us < 30 else None
        compile_us = timed_compile(case, ins, modes, name)
        rows = []
        for i, e in enumerate(variants):
            r = {"variant": i, "knobs": e["knobs"]}
            if "file" not in e or e["file"] in errors:
                r["error"] = e.get("invalid", "build failed")
                rows.append(r)
                continue
            lib = ctypes.CDLL(os.path.join(so_dir, e["file"][:-3] + ".so"))
            lib.kf_launch.restype = ctypes.c_int
            ok, msg, rel = check(lib, case, ins)
            for j, o in enumerate(odd):
                if ok:
                    ok, m2, _ = check(lib, case, o)
                    if not ok:
                        msg = f"odd shape {[tuple(t.shape) for t in o]}: {m2}"
            r.update(ok=ok, msg=msg, rel=rel)
            if ok:
                outs = [torch.empty_like(t) for t in as_list(case["eager"](*ins))]
                st = torch.cuda.current_stream().cuda_stream
                r["us"] = do_bench(lambda: launch(lib, ins, outs, st), warmup=10, rep=60, return_mode="median") * 1e3
                if r["us"] < 30:
                    r["hot_us"] = hot_us(lambda: launch(lib, ins, outs, torch.cuda.current_stream().cuda_stream))
            rows.append(r)
            hot = f" hot {r['hot_us']:.2f}us" if "hot_us" in r else ""
            print(name, i, "ok" if ok else "FAIL", msg, f"{r.get('us', 0):.2f}us{hot}", e["knobs"], flush=True)
        if eager_hot is not None:
            print(name, "eager", f"{eager_us:.2f}us hot {eager_hot:.2f}us", flush=True)
        results[name] = {"eager_us": eager_us, "eager_hot_us": eager_hot, "compile": compile_us, "variants": rows}
        good = [r for r in rows if r.get("ok")]
        best = min(good, key=lambda r: r["us"]) if good else None
        an = ANCHORS.get(name, (0, 0, 0))
        if compile_us:  # this process's torch.compile, the faster mode (cold), in place of the anchor's
            an = (an[0], round(min(c["us"] for c in compile_us.values()), 2), an[2])
        table.append((name, best, rows[0].get("us"), eager_us, an))
    json.dump(results, open(os.path.join(out_dir, "results.json"), "w"), indent=1)
    print("\n| case | best us (variant) | default us | eager us (anchor) | compile us | floor us | best/floor | best/compile |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, best, d, eager_us, (ae, ac, fl) in table:
        if best is None:
            print(f"| {name} | FAIL | | {eager_us:.1f} ({ae}) | {ac} | {fl} | | |")
            continue
        # A case without an anchor (0: not measured) has no ratio to print.
        ratio = lambda ref: f"{best['us'] / ref:.2f}" if ref else "—"
        print(f"| {name} | {best['us']:.2f} (v{best['variant']}) | {d or 0:.2f} | {eager_us:.1f} ({ae}) | {ac or '—'} | "
              f"{fl or '—'} | {ratio(fl)} | {ratio(ac)} |")

if __name__ == "__main__":
    main()
