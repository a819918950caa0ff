#!/usr/bin/env python3
"""kforge e2e's runner: times a user's model's forward pass four ways and writes the raw samples as JSON
(lib/e2e/e2e_result.h reads it; the statistics are kforge's, computed there).

usage: e2e.py --model FILE.py:FUNCTION --device cpu|cuda --out SAMPLES.json [--model-args k=v,...]
              [--workloads DIR] [--names a,b] [--variants eager,kforge,compile,compile_kforge]
              [--warmup N] [--min-samples N] [--max-noise X] [--timeout S] [--profile-passes N]
              [--rtol X] [--atol X]

The variants: eager (the model as given), kforge (kforge.rewrite_best: the better of a copy with kforge.patch, the
stored kernels as operators in place of modules, then kforge.rewrite_eager of it, its forward captured as an ATen
graph without compiling, the loaded workloads' patterns in it replaced by their operators, run op by op as eager
runs; and kforge.rewrite_eager of an unpatched copy, then patched for what it did not replace: whichever's operator
calls cover more of the captured time, the cases' shares, else more calls, the variant's "note" saying which; where
the forward cannot be captured, module patching alone, the note saying why), compile (torch.compile of the model),
compile_kforge (kforge.compile of the kforge variant's patched copy: the module operators inside the compiled graph,
and the patterns replaced in the graph before inductor compiles it, where kforge.compile's policy does not leave
them to inductor: elementwise-only workloads, kernels recorded slower than torch.compile, and calls whose input is
an elementwise result inductor would fuse in, each named with its reason in the variant's "note"). "patched" lists the modules (how "rule" or "behaviour") and each variant's graph replacements
(module "(graph)", how "graph", with a count and the variant). Each runs --warmup times, then its outputs are
compared with eager's (a variant whose outputs differ fails and is not timed; lib/e2e/output_check.py: per floating
output, the relative error of the whole output, ||got - eager|| / ||eager||, and of its worst row, within limits set
by the lowest-precision floating dtype the model computes in; --rtol/--atol: |got - eager| <= atol + rtol |eager|
for every value instead), then the variants are timed in rounds, one forward of each per round (so drift hits all
alike and the samples pair up), cold (on cuda: L2 flushed, CUDA events around one forward, synchronized) until each
has --min-samples and a relative noise within --max-noise, or --timeout seconds; on cuda the same again hot, each
variant captured in a CUDA graph and replayed (per-replay times). "replaced_cases" (kforge.replaced_cases): the
kforge variant's operator calls by workload and spec case, with the case's capture share and calls and the stored
winner's recorded times, for the Amdahl prediction from the capture's shares (lib/e2e/share_prediction.h). The
in-model profile (a diagnostic): each patched module's calls
timed in the eager model and in the patched one, and each workload the kforge variant's graph rewrite replaced timed
in the captured graph before the rewrite (its matched ATen ops) and after (its operator calls;
kforge.pattern_profile), over --profile-passes passes, with the whole forward, so kforge can say what share of the
time the replaced patterns take and what they gain.

Exit 2 on the user's mistakes (no such file or function, a bad result, a bad device), with "e2e.py: error:".
"""
import argparse
import copy
import functools
import importlib.util
import json
import os
import pathlib
import statistics
import sys
import time
import traceback

SAMPLES_VERSION = 1
VARIANTS = ["eager", "kforge", "compile", "compile_kforge"]
HERE = pathlib.Path(__file__).resolve().parent

def fail(message):
    print(f"e2e.py: error: {message}", file=sys.stderr)
    sys.exit(2)


@functools.lru_cache(maxsize=None)
def tracer_module():
    """lib/capture/trace.py, for its model loading (the same FILE.py:FUNCTION rules as kforge capture), loaded once."""
    spec = importlib.util.spec_from_file_location("kforge_capture_trace", HERE.parent / "capture" / "trace.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.fail = fail  # its errors read as ours
    return module


def sync(cuda):
    import torch

    if cuda:
        torch.cuda.synchronize()


def flat_tensors(out):
    """A model's outputs as a list of tensors (capture's rule: dicts by value, nested tuples and lists in order)."""
    return tracer_module().flat_tensors(out)


class timer:
    """One forward's time: CUDA events on the current stream (synchronized) on cuda, perf_counter on the cpu."""

    def __init__(self, cuda):
        import torch

        self.cuda = cuda
        if cuda:
            self.start, self.end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            # Cold: the L2 flushed before each sample (a buffer twice its size written), as kforge run's cold.
            l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 64 << 20)
            self.flush_buf = torch.empty(max(2 * l2, 1 << 20), dtype=torch.uint8, device="cuda")

    def time(self, fn, reps=1, flush=True):
        """Microseconds per call of `fn`, `reps` calls in one timed pass."""
        if self.cuda:
            import torch

            if flush:
                self.flush_buf.zero_()
            self.start.record()
            for _ in range(reps):
                fn()
            self.end.record()
            torch.cuda.synchronize()
            return self.start.elapsed_time(self.end) * 1e3 / reps
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        return (time.perf_counter() - t0) * 1e6 / reps


def noise(xs):
    if len(xs) < 2:
        return 0.0
    m = statistics.fmean(xs)
    return statistics.stdev(xs) / m if m > 0 else 0.0


def time_rounds(fns, t, a, reps=None, flush=True):
    """Samples per variant, one of each per round, until every one has min_samples and noise within max_noise
    (and min-seconds of measured time), or the timeout once min_samples are in."""
    samples = {name: [] for name in fns}
    started = time.perf_counter()
    while True:
        for name, fn in fns.items():
            samples[name].append(t.time(fn, reps[name] if reps else 1, flush))
        n = min(len(s) for s in samples.values())
        if n >= a.min_samples:
            elapsed = time.perf_counter() - started
            measured = min(sum(s) * (reps[name] if reps else 1) for name, s in samples.items()) * 1e-6
            converged = all(noise(s) <= a.max_noise for s in samples.values()) and measured >= a.min_seconds
            if converged:
                return samples, "converged"
            if elapsed >= a.timeout:
                return samples, "timed_out"


def graph_entries(rewritten, variant):
    """`patched` entries, module "(graph)", for what a graph rewrite (kforge.rewritten's list) replaced in a variant."""
    return [{"module": "(graph)", "workloads": [r["workload"]], "how": "graph", "count": r["count"], "variant": variant}
            for r in rewritten]


def make_variants(model, inputs, names, a):
    """{name: callable} for the variants asked for, {name: why} for those that could not be made, {name: note} for
    those made with less than asked (the kforge variant whose forward was not captured for the graph rewrite;
    compile_kforge's calls that kforge.compile's policy left to inductor),
    what was patched ([{module, workloads, how}]: kforge.patch's modules, and how "graph" for the workloads the
    graph rewrites replaced, module "(graph)", with a count and the variant), the patched model and the kforge
    variant (kforge.rewrite_eager's result, for the profile)."""
    import torch

    fns, broken, notes, patched = {}, {}, {}, []
    model_kforge = fast = choice = None
    rewrite_failed = ""
    nothing = ("kforge.patch found no module whose forward is a loaded workload's graph (by type or by behaviour on "
               "the model's inputs)")
    if any(n in names for n in ("kforge", "compile_kforge")):
        try:
            sys.path.insert(0, str(HERE.parents[1] / "python"))
            import kforge

            kforge.load(a.workloads, device="cuda" if a.device.startswith("cuda") else "cpu",
                        names=[n for n in a.names.split(",") if n] or None)
            # The better of patch-then-rewrite and rewrite-first (kforge.coverage: which replaces more of the
            # captured time); its patched copy is compile_kforge's model too.
            try:
                fast, choice = kforge.rewrite_best(model, inputs)
                model_kforge = choice["patched"]
            except Exception as e:  # the capture or the rewrite raised: kforge.patch's modules alone
                rewrite_failed = f"kforge.rewrite_eager raised {type(e).__name__}: {e}"
                model_kforge = kforge.patch(copy.deepcopy(model), example_inputs=inputs)
            patched = [{"module": m.name, "workloads": m.workloads, "how": m.how}
                       for m in kforge.patched_modules(model_kforge)]
        except Exception as e:  # the library missing, a workload that does not load: the variants say why
            for n in ("kforge", "compile_kforge"):
                broken[n] = f"kforge.load/patch failed: {type(e).__name__}: {e}"
            model_kforge = fast = choice = None
    modules = bool(patched)
    for n in names:
        if n in broken:
            continue
        if n == "eager":
            fns[n] = lambda m=model: m(*inputs)
        elif n == "kforge":
            # The patched copy's forward as an ATen graph with the patterns written inline replaced by their
            # operators, run eagerly; where it cannot be captured, the patched copy as it is.
            import kforge

            if rewrite_failed:
                broken[n] = rewrite_failed
                continue
            graph = kforge.rewritten(fast)
            patched += graph_entries(graph, n)
            not_captured = f"the forward was not captured for the graph rewrite ({fast.why})" if fast.why else ""
            if not graph and not modules:
                broken[n] = (f"{nothing}, and the graph rewrite (kforge.rewrite_eager) replaced no pattern" +
                             (f": {not_captured}" if not_captured else ""))
                continue
            notes[n] = (not_captured + ": kforge.patch's modules only; " if not_captured else "") + choice["note"]
            fns[n] = lambda m=fast: m(*inputs)
        elif n == "compile":
            c = torch.compile(model)
            fns[n] = lambda c=c: c(*inputs)
        elif n == "compile_kforge":
            # The patched copy compiled with kforge's graph rewrite (the loaded workloads' patterns, inline ones
            # too, replaced by their operators in the ATen graph inductor compiles). The first call compiles it,
            # so what the rewrite replaced is known here.
            import kforge

            c = kforge.compile(model_kforge, backend="inductor")
            try:
                c(*inputs)
            except Exception as e:
                broken[n] = f"kforge.compile (the graph rewrite, then inductor) raised {type(e).__name__}: {e}"
                continue
            graph = kforge.rewritten(c)
            patched += graph_entries(graph, n)
            # What kforge.compile's policy left to inductor (elementwise-only workloads, kernels recorded slower
            # than torch.compile, calls inductor would fuse an elementwise producer into): matches left as written
            # and patched modules' calls put back, with the reasons.
            left = kforge.left_to_inductor(c)
            if left:
                notes[n] = "kforge.compile left to inductor: " + "; ".join(
                    f"{x['workload']} ({x['count']} call{'s' if x['count'] != 1 else ''}): {x['why']}" for x in left)
            if not graph and not modules and not left:
                broken[n] = f"{nothing}, and the graph rewrite (kforge.compile) replaced no pattern either"
                continue
            fns[n] = lambda c=c: c(*inputs)
    if choice is not None and choice["how"] != "patch-then-rewrite" and "compile_kforge" in fns:
        notes["compile_kforge"] = "; ".join(x for x in (f"the model as the kforge variant patched it ({choice['how']})",
                                                        notes.get("compile_kforge")) if x)
    return fns, broken, notes, patched, model_kforge, fast, choice


def graph_of(fn, cuda):
    """fn captured in a CUDA graph (after warming it on a side stream), as a callable replaying it."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    torch.cuda.synchronize()
    return g.replay


def module_profile(model, patched_model, patched, inputs, cuda, passes, graph=None):
    """Each patched module's time per pass in the eager model (the module and the later modules of its run) and in
    the patched one, with the whole forward's, from synchronized forward hooks; with `graph` (the kforge variant,
    kforge.rewrite_eager's result), each workload its rewrite replaced, timed in the captured graph before and
    after the rewrite (kforge.pattern_profile), as a pattern of module "(graph)"."""
    import torch

    timers, call = None, None
    if graph is not None:
        from kforge.pattern_profile import pattern_timers

        timers = pattern_timers(graph, lambda: sync(cuda))
        call = graph.graph_call(tuple(inputs), {})[0] if timers else None
        timers = timers if call is not None else None
    replaced = {}
    names = {p["module"] for p in patched}
    rest = {}
    for name, m in patched_model.named_modules():
        p = getattr(m, "_kforge_patch", None)
        if p is not None and p.rest_keys:
            parent = name.rpartition(".")[0]
            rest[name] = [f"{parent}.{k}" if parent else k for k in p.rest_keys]
    owner = {name: name for name in names}
    for name, keys in rest.items():
        for k in keys:
            owner[k] = name

    def hooked(m, wanted):
        acc, starts, handles = {}, {}, []
        for name, sub in m.named_modules():
            if name not in wanted:
                continue

            def pre(mod, args, name=name):
                sync(cuda)
                starts[name] = time.perf_counter()

            def post(mod, args, out, name=name):
                sync(cuda)
                acc[wanted[name]] = acc.get(wanted[name], 0.0) + (time.perf_counter() - starts.pop(name)) * 1e6

            handles += [sub.register_forward_pre_hook(pre), sub.register_forward_hook(post)]
        return acc, handles

    out = {"passes": passes, "total_us": [], "patterns": {n: {"eager_us": [], "kforge_us": []} for n in names}}
    for _ in range(passes):
        for which, m, wanted in (("eager_us", model, owner), ("kforge_us", patched_model, {n: n for n in names})):
            acc, handles = hooked(m, wanted)
            sync(cuda)
            t0 = time.perf_counter()
            m(*inputs)
            sync(cuda)
            total = (time.perf_counter() - t0) * 1e6
            for h in handles:
                h.remove()
            if which == "eager_us":
                out["total_us"].append(total)
            for n in names:
                out["patterns"][n][which].append(acc.get(n, 0.0))
        if timers:
            for which, key in (("eager", "eager_us"), ("kforge", "kforge_us")):
                for w, us in timers[which](call).items():
                    replaced.setdefault(w, {"eager_us": [], "kforge_us": []})[key].append(us)
    out["patterns"] = [dict(module=p["module"], workloads=p["workloads"], **out["patterns"][p["module"]]) for p in patched]
    counts = {r["workload"]: r["count"] for r in kforge_rewritten(graph)}
    out["patterns"] += [dict(module="(graph)", workloads=[w], count=counts.get(w, 0), **t) for w, t in
                        sorted(replaced.items())]
    return out


def kforge_rewritten(graph):
    """kforge.rewritten(graph), [] without one."""
    if graph is None:
        return []
    import kforge

    return kforge.rewritten(graph)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--out", required=True)
    p.add_argument("--model-args", default="")
    p.add_argument("--workloads", default="workloads")
    p.add_argument("--names", default="")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--min-samples", type=int, default=10)
    p.add_argument("--max-noise", type=float, default=0.005)
    p.add_argument("--min-seconds", type=float, default=0.5)
    p.add_argument("--timeout", type=float, default=15)
    p.add_argument("--profile-passes", type=int, default=5)
    p.add_argument("--rtol", type=float, default=None)
    p.add_argument("--atol", type=float, default=None)
    a = p.parse_args(argv)

    names = [n for n in a.variants.split(",") if n]
    for n in names:
        if n not in VARIANTS:
            fail(f"--variants: unknown variant {n!r} (expected some of {', '.join(VARIANTS)})")
    if "eager" not in names:
        names.insert(0, "eager")  # the reference every other variant is checked against
    if (a.rtol is None) != (a.atol is None):
        fail("--rtol and --atol go together")

    import torch

    sys.path.insert(0, str(HERE))
    import output_check  # lib/e2e/output_check.py

    cuda = a.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        fail(f"--device {a.device}: torch sees no CUDA device")
    if not cuda and a.device != "cpu":
        fail(f"--device {a.device}: expected cpu, cuda or cuda:N")
    if cuda and torch.device(a.device).index is not None:
        torch.cuda.set_device(torch.device(a.device))
    tr = tracer_module()
    fn = tr.load_function(a.model)
    result = {"version": SAMPLES_VERSION, "model": a.model, "device": "cuda" if cuda else "cpu",
              "torch": torch.__version__, "threads": torch.get_num_threads(), "warmup": a.warmup,
              "variants": [], "hot_skipped": "" if cuda else "cpu: no CUDA graph"}
    with torch.no_grad():
        model, inputs = tr.build(fn, a.device, tr.parse_model_args(a.model_args))
        fns, broken, notes, patched, model_kforge, fast, choice = make_variants(model, inputs, names, a)
        result["patched"] = patched
        status = {n: {"name": n, "status": "ok", "why": broken.get(n, "")} for n in names}
        for n, note in notes.items():
            status[n]["note"] = note
        for n in broken:
            if n in status:  # make_variants marks both kforge variants when either was asked for
                status[n]["status"] = "failed"
        reference = None
        for n in list(fns):
            try:
                for _ in range(max(a.warmup, 1)):
                    out = fns[n]()
                sync(cuda)
            except Exception as e:
                status[n].update(status="failed", why=f"the forward raised {type(e).__name__}: {e}",
                                 trace=traceback.format_exc()[-2000:])
                del fns[n]
                if n == "eager":
                    fail(f"the eager forward of {a.model} raised {type(e).__name__}: {e}")
                continue
            if n == "eager":
                reference = flat_tensors(out)
                compute = output_check.compute_dtype(model, inputs, reference)
                result["compute_dtype"] = compute
                continue
            why, worst = output_check.compare(flat_tensors(out), reference, compute, a.rtol, a.atol)
            status[n]["max_error_ratio"] = worst if worst != float("inf") else None
            if why:
                status[n].update(status="failed", why=f"outputs differ from eager: {why}")
                del fns[n]
        cold, stop = time_rounds(fns, timer(cuda), a) if fns else ({}, "")
        result["cold_stop"] = stop
        for n, s in cold.items():
            status[n]["cold_us"] = s
        if cuda and fns:
            graphs, reps = {}, {}
            for n, f in fns.items():
                try:
                    graphs[n] = graph_of(f, cuda)
                except Exception as e:
                    status[n]["hot_skipped"] = f"CUDA graph capture failed: {type(e).__name__}: {e}"
                    torch.cuda.synchronize()
            for n in graphs:  # one hot pass lasts about 1 ms, as kforge run's
                reps[n] = max(1, min(100, int(1000 / max(statistics.median(cold[n]), 1.0))))
            if graphs:
                hot, hot_stop = time_rounds(graphs, timer(cuda), a, reps, flush=False)
                result["hot_stop"] = hot_stop
                for n, s in hot.items():
                    status[n]["hot_us"] = s
                    status[n]["launches_per_sample"] = reps[n]
        # The prediction from the capture's shares: what the kforge variant's operators replaced, by case, with the
        # spec cases' shares and the stored winners' recorded speedups (lib/e2e/share_prediction.h does the sums).
        if "kforge" in fns and choice is not None:
            import kforge

            result["replaced_cases"] = kforge.replaced_cases(choice["calls"], "cuda" if cuda else "cpu")
        # The profile: the patched modules (hooks in the eager and the patched model) and the kforge variant's
        # graph replacements (in its graph before and after the rewrite); compile_kforge's are not profiled.
        modules = [p for p in patched if p["how"] != "graph"]
        graph = fast if "kforge" in fns and kforge_rewritten(fast) else None
        if (modules or graph is not None) and "kforge" in fns:
            result["profile"] = module_profile(model, model_kforge, modules, inputs, cuda,
                                               max(a.profile_passes, 1), graph)
    result["variants"] = [status[n] for n in names]
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
