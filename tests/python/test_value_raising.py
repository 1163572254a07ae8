"""The table of ops that raise for the values of an operand (src/knowledge/value_raising.cpp)
holds what torch does: each entry, called with a value of its deciding operand that is out of
range, raises with torch 2.12.1, and with an in-range value returns. GM201 refuses a select that
would run such an op on the path the `if` did not take (tests/fixtures/predicated-control-flow/
value_raising.py), so an entry that no longer raises would refuse fixes for nothing, and an op
missing from the table would let a select raise where the original returned (c26)."""
import re

import pytest
import torch
import torch.nn.functional as F

from conftest import REPO

TABLE = REPO / "src" / "knowledge" / "value_raising.cpp"

# Each entry's call with a raising value (bad) and with a harmless one (good) of its operand.
a = torch.tensor([5, 7])
m = torch.eye(2)
CALLS = {
    "%": (lambda: a % torch.tensor(0), lambda: a % torch.tensor(2)),
    "//": (lambda: a // torch.tensor(0), lambda: a // torch.tensor(2)),
    "bincount": (lambda: torch.bincount(torch.tensor([-1])), lambda: torch.bincount(torch.tensor([1]))),
    "cholesky": (lambda: torch.linalg.cholesky(-m), lambda: torch.linalg.cholesky(m)),
    "div": (lambda: torch.div(a, torch.tensor(0), rounding_mode="floor"),
            lambda: torch.div(a, torch.tensor(2), rounding_mode="floor")),
    "embedding": (lambda: F.embedding(torch.tensor([5]), torch.randn(3, 2)),
                  lambda: F.embedding(torch.tensor([2]), torch.randn(3, 2))),
    "floor_divide": (lambda: torch.floor_divide(a, torch.tensor(0)), lambda: torch.floor_divide(a, torch.tensor(2))),
    "fmod": (lambda: torch.fmod(a, torch.tensor(0)), lambda: torch.fmod(a, torch.tensor(2))),
    "gather": (lambda: a.gather(0, torch.tensor([5])), lambda: a.gather(0, torch.tensor([1]))),
    "index_add": (lambda: torch.zeros(2).index_add(0, torch.tensor([5]), torch.ones(1)),
                  lambda: torch.zeros(2).index_add(0, torch.tensor([1]), torch.ones(1))),
    "index_copy": (lambda: torch.zeros(2).index_copy(0, torch.tensor([5]), torch.ones(1)),
                   lambda: torch.zeros(2).index_copy(0, torch.tensor([1]), torch.ones(1))),
    "index_fill": (lambda: torch.zeros(2).index_fill(0, torch.tensor([5]), 1.0),
                   lambda: torch.zeros(2).index_fill(0, torch.tensor([1]), 1.0)),
    "index_put": (lambda: torch.zeros(2).index_put((torch.tensor([5]),), torch.ones(1)),
                  lambda: torch.zeros(2).index_put((torch.tensor([1]),), torch.ones(1))),
    "index_select": (lambda: a.index_select(0, torch.tensor([5])), lambda: a.index_select(0, torch.tensor([1]))),
    "inv": (lambda: torch.linalg.inv(torch.zeros(2, 2)), lambda: torch.linalg.inv(m)),
    "inverse": (lambda: torch.inverse(torch.zeros(2, 2)), lambda: torch.inverse(m)),
    "multinomial": (lambda: torch.multinomial(torch.tensor([-1.0, 1.0]), 1),
                    lambda: torch.multinomial(torch.tensor([0.0, 1.0]), 1)),
    "narrow": (lambda: a.narrow(0, torch.tensor(5), 1), lambda: a.narrow(0, torch.tensor(1), 1)),
    "one_hot": (lambda: F.one_hot(torch.tensor([5]), 3), lambda: F.one_hot(torch.tensor([2]), 3)),
    "remainder": (lambda: torch.remainder(a, torch.tensor(0)), lambda: torch.remainder(a, torch.tensor(2))),
    "repeat_interleave": (lambda: torch.repeat_interleave(a, torch.tensor([1, -1])),
                          lambda: torch.repeat_interleave(a, torch.tensor([1, 2]))),
    "scatter": (lambda: torch.zeros(2).scatter(0, torch.tensor([5]), 1.0),
                lambda: torch.zeros(2).scatter(0, torch.tensor([1]), 1.0)),
    "scatter_add": (lambda: torch.zeros(2).scatter_add(0, torch.tensor([5]), torch.ones(1)),
                    lambda: torch.zeros(2).scatter_add(0, torch.tensor([1]), torch.ones(1))),
    "scatter_reduce": (lambda: torch.zeros(2).scatter_reduce(0, torch.tensor([5]), torch.ones(1), "sum"),
                       lambda: torch.zeros(2).scatter_reduce(0, torch.tensor([1]), torch.ones(1), "sum")),
    "solve": (lambda: torch.linalg.solve(torch.zeros(2, 2), torch.ones(2)), lambda: torch.linalg.solve(m, torch.ones(2))),
    "take": (lambda: torch.take(a, torch.tensor([5])), lambda: torch.take(a, torch.tensor([1]))),
    "take_along_dim": (lambda: torch.take_along_dim(a, torch.tensor([5])),
                       lambda: torch.take_along_dim(a, torch.tensor([1]))),
}


def table_names():
    return re.findall(r'ValueRaisingOp\{"([^"]+)"', TABLE.read_text())


def test_the_table_is_sorted_and_every_entry_has_a_call_here():
    names = [n for n in table_names() if n != "Embedding"]  # the module entry: nn.Embedding, "embedding" below
    assert names == sorted(names), "value_raising_op searches the table: keep it sorted"
    assert set(names) == set(CALLS)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_entry_raises_for_a_value_and_returns_for_another(name):
    bad, good = CALLS[name]
    with pytest.raises((RuntimeError, IndexError)):
        bad()
    good()


def test_a_compiled_integer_division_by_zero_raises_too():
    # What a select runs is compiled: the division raises there as well (c26's failure).
    def divide(x, d):
        return torch.div(x, d, rounding_mode="floor")

    torch._dynamo.reset()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.compile(divide, backend="aot_eager")(a, torch.tensor(0))
