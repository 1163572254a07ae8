"""Count the FX graphs and graph breaks of one compiled call.

    counter = GraphCounter()
    compiled = counter.compile(model)          # torch._dynamo.reset() + counters cleared
    compiled(*inputs)
    counter.graphs                             # FX graphs handed to the backend
    counter.dynamo_breaks()                    # sum of counters["graph_break"]
    counter.break_reasons()                    # {reason: count}
"""
from __future__ import annotations

import torch
import torch._dynamo
from torch._dynamo.utils import counters


class GraphCounter:
    """A counting backend: each FX graph Dynamo produces is counted and run as traced."""

    def __init__(self):
        self.graphs = 0

    def backend(self, gm, example_inputs):
        """torch.compile backend: count the graph, run its forward unchanged."""
        self.graphs += 1
        return gm.forward

    def compile(self, model):
        """Reset Dynamo and its counters, then compile with this backend, dynamic=False."""
        torch._dynamo.reset()
        counters.clear()
        self.graphs = 0
        return torch.compile(model, backend=self.backend, dynamic=False)

    @staticmethod
    def dynamo_breaks():
        """Dynamo's own count of graph breaks (sum over counters['graph_break'])."""
        return int(sum(counters["graph_break"].values()))

    @staticmethod
    def break_reasons():
        """Dynamo's graph-break reasons with their counts."""
        return {str(k): int(v) for k, v in counters["graph_break"].items()}
