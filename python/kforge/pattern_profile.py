"""The time of the patterns kforge.rewrite_eager replaced, per workload, before and after the rewrite (kforge e2e's
Amdahl profile takes it beside its per-module one).

``pattern_timers(rewritten, sync)`` gives two callables; each runs the forward once on a call's graph arguments
(``rewritten.graph_call(args, kwargs)[0]``) and returns ``{workload: microseconds}``:

- "eager": the captured graph before the rewrite, each match's ATen ops timed together (moved next to each other,
  just before the match's last op, when nothing else uses them before it; one by one otherwise);
- "kforge": the rewritten graph, each operator call that replaced a match timed alone.

Each timed stretch is bracketed by `sync()` and the clock (perf_counter), so on cuda a stretch pays its own launch
latency, as a patched module's time in the module profile does. The rest of the graph runs untimed, as generated
code, as in the rewritten model.
"""
import time

import torch

from .eager_rewrite import _copy_graph


class _Clock:
    def __init__(self, sync):
        self.sync, self.started, self.times = sync, {}, {}

    def start(self, key):
        self.sync()
        self.started[key] = time.perf_counter()

    def stop(self, key, workload, after):
        self.sync()
        self.times[workload] = self.times.get(workload, 0.0) + (time.perf_counter() - self.started.pop(key)) * 1e6


def _stretches(graph, names):
    """The nodes of one match (by name) as stretches to time: one when they can run together, else one per node."""
    order = {n: i for i, n in enumerate(graph.nodes)}
    nodes = sorted((n for n in graph.nodes if n.name in set(names)), key=order.get)
    if not nodes:
        return []
    last, members = nodes[-1], set(nodes)
    # The matcher keeps a match inside one mutation region, so moving its ops up to its last op crosses no write.
    if all(u in members or order[u] > order[last] for n in nodes[:-1] for u in n.users):
        for n in nodes[:-1]:
            last.prepend(n)
        return [nodes]
    return [[n] for n in nodes]


def _timed(gm, groups, clock):
    """A copy of GraphModule `gm` whose groups [(workload, [node names])] are bracketed by clock calls."""
    graph = _copy_graph(gm.graph)
    key = 0
    for workload, names in groups:
        for stretch in _stretches(graph, names):
            with graph.inserting_before(stretch[0]):
                graph.call_function(clock.start, (key,))
            with graph.inserting_after(stretch[-1]):
                graph.call_function(clock.stop, (key, workload, stretch[-1]))
            key += 1
    graph.lint()
    return torch.fx.GraphModule(gm, graph)


def pattern_timers(rewritten, sync=lambda: None):
    """{"eager": fn, "kforge": fn} for kforge.rewrite_eager's result (see the module's docstring), or None when it
    captured nothing or replaced nothing."""
    r = getattr(rewritten, "_kforge_rewrite", None)
    if rewritten.graph_module is None or r is None or not r.matches:
        return None
    timers = {}
    for which, gm, groups in (("eager", rewritten.captured_graph, r.matches),
                              ("kforge", rewritten.graph_module,
                               [(w, [n]) for w, names in r.replacements.items() for n in names])):
        clock = _Clock(sync)
        timed = _timed(gm, groups, clock)

        def run(call, timed=timed, clock=clock):
            clock.times = {}
            timed(*call)
            return dict(clock.times)

        timers[which] = run
    return timers
