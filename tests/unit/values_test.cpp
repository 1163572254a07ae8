// The value analysis (values.hpp): kinds and data dependence through arithmetic, calls,
// returns, parameters joined over call sites, annotations and switch-named flags.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graphmend/values.hpp"

using namespace graphmend;
using syntax::Node;

namespace {

// One file `/tmp/vt/model.py` holding `source`, analysed as a project of its own.
struct Analysed {
    explicit Analysed(const std::string& source) : project(make(source)), values(project) {}

    static analysis::Project make(const std::string& source) {
        syntax::Tree tree = syntax::Tree::parse(source);
        auto index = analysis::index_module(tree.root());
        std::vector<analysis::SourceFile> files;
        files.push_back({"/tmp/vt/model.py", "model", false, std::move(tree), std::move(index), "/tmp/vt", true});
        return analysis::Project(std::move(files));
    }

    // The test of the `if` (or the value of the `return`) on the line holding `marker`.
    [[nodiscard]] Node at(const std::string& marker) const {
        const auto& src = project.files()[0].tree.source();
        const auto line = src.position(static_cast<std::uint32_t>(src.text().find(marker))).line;
        Node found;
        syntax::walk(project.files()[0].tree.root(), [&](const Node& n) {
            if (found || n.position().line != line) return !found;
            if (n.is("if_statement")) found = n.field("condition");
            if (n.is("return_statement") && !n.named_children().empty()) found = n.named_children()[0];
            return !found;
        });
        return found;
    }

    [[nodiscard]] bool data_test(const std::string& marker) const { return values.data_test(0, at(marker)); }

    analysis::Project project;
    analysis::Values values;
};

const char* kModel = R"(import torch
from torch import nn


def scale(h, limit):
    if limit > 4:  # M1 limit is a tensor at its call site
        h = h * 2
    return h


def count(n):
    if n > 4:  # M2 n is an int at its call site
        return 1
    return 0


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("lo", torch.tensor(0.0))
        self.rate = 0.5

    def in_range(self, a):
        return (a >= self.lo).all()  # M3

    def forward(self, x, step, mask=None, n_layers: int = 2, output_attentions=None):
        h = self.fc(x)
        m = h.mean()
        r = 2 * m / (1 - m)
        if r > 5:  # M4 arithmetic from a reduction
            h = h + 1
        if step > 1.0:  # M5 a bare forward parameter: a tensor
            h = h + 1
        if not self.in_range(h):  # M6 a method returning a tensor
            h = h + 1
        hits = x.sum().item()
        if hits > 3:  # M7 a number read out of a tensor
            h = h + 1
        if h.shape[0] > 2:  # M8 a shape
            h = h + 1
        if n_layers > 1:  # M9 an int parameter
            h = h + 1
        if output_attentions:  # M10 a flag
            h = h + 1
        if mask is not None:  # M11 identity
            h = h + 1
        if self.rate > 0.1:  # M12 a Python number attribute
            h = h + 1
        if self.lo > 0:  # M13 a buffer
            h = h + 1
        h = scale(h, h.amax())
        c = count(3)
        return h
)";

TEST(Values, DataTestsFollowValuesNotSpellings) {
    const Analysed a(kModel);
    EXPECT_TRUE(a.data_test("M1"));
    EXPECT_FALSE(a.data_test("M2"));
    EXPECT_TRUE(a.data_test("M4"));
    EXPECT_TRUE(a.data_test("M5"));
    EXPECT_TRUE(a.data_test("M6"));
    EXPECT_TRUE(a.data_test("M7"));
    EXPECT_FALSE(a.data_test("M8"));
    EXPECT_FALSE(a.data_test("M9"));
    EXPECT_FALSE(a.data_test("M10"));
    EXPECT_FALSE(a.data_test("M11"));
    EXPECT_FALSE(a.data_test("M12"));
    EXPECT_TRUE(a.data_test("M13"));
}

TEST(Values, ReturnsAndScalarsCarryTheirKinds) {
    const Analysed a(kModel);
    EXPECT_TRUE(a.values.eval(0, a.at("M3")).tensor());
    const Node m7 = a.at("M7");
    const auto scalars = a.values.data_scalars(0, m7);
    ASSERT_EQ(scalars.size(), 1u);
    EXPECT_EQ(scalars[0], "hits");
    const analysis::Value hits = a.values.eval(0, m7.named_children()[0]);
    EXPECT_TRUE(hits.data);
    EXPECT_FALSE(hits.tensor());
}

TEST(Values, AnnotationsAreReadMemberByMember) {
    const Analysed a(R"(import torch
from typing import List, Optional, Union
from torch import nn


class Model(nn.Module):
    def forward(self, a: Optional[torch.Tensor], b: Union[int, List[torch.Tensor]], c: "torch.FloatTensor"):
        if a:  # A
            pass
        if b:  # B
            pass
        if c:  # C
            pass
        return a
)");
    EXPECT_TRUE(a.data_test("# A"));
    EXPECT_FALSE(a.data_test("# B"));
    EXPECT_TRUE(a.data_test("# C"));
}

// A shape made by torch.Size or torch.broadcast_shapes is a torch.Size, whose comparison with
// another shape is settled at trace time (gpytorch 1.15's nearest-neighbour KL assert, which
// was a false "fixed" GM301 site); an attribute bound to torch.device(...) in __init__ is no
// tensor either (torch 2.12.1's DataParallel.forward: `if t.device != self.src_device_obj:
// raise`, another false "fixed" GM301 site).
TEST(Values, ShapesAndDevicesMadeByTorchAreNoTensors) {
    const Analysed a(R"(import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.batch_shape: torch.Size = torch.broadcast_shapes(a.shape, b.shape)
        self.device_obj = torch.device("cpu", 0)
        self.eps = torch.finfo(torch.float32).eps
        self.scale = torch.ones(1)

    def forward(self, x):
        if x.shape == self.batch_shape:  # S
            pass
        if x.shape == torch.Size([2, 3]):  # T
            pass
        if x.device != self.device_obj:  # D
            pass
        if self.scale > 1:  # U
            pass
        return x
)");
    EXPECT_FALSE(a.data_test("# S"));
    EXPECT_FALSE(a.data_test("# T"));
    EXPECT_FALSE(a.data_test("# D"));
    EXPECT_TRUE(a.data_test("# U"));  // torch.ones(1): a tensor
}

TEST(Values, CalledForwardTakesItsCallersValues) {
    // Inner.forward is called with a Python int: its bare parameter is no tensor there.
    const Analysed a(R"(import torch
from torch import nn


class Inner(nn.Module):
    def forward(self, x, k):
        if k > 1:  # K
            return x
        return x


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(x, 3)
)");
    EXPECT_FALSE(a.data_test("# K"));
}

TEST(Values, ASubmoduleForwardNoAnalysedCallReachesTakesNothingForData) {
    // Florence-2's DaViT: WindowAttention is built inside SpatialBlock.__init__ and called
    // through PreNorm's `self.fn`, which the analysis does not resolve; `size` is a pair of ints,
    // so `pad_r > 0` is no data test. The model itself (an entry) still takes tensors.
    const Analysed a(R"(import torch
from torch import nn


class PreNorm(nn.Module):
    def __init__(self, norm, fn):
        super().__init__()
        self.norm = norm
        self.fn = fn

    def forward(self, x, *args):
        return self.fn(self.norm(x), *args)


class WindowAttention(nn.Module):
    def forward(self, x, size):
        H, W = size
        pad_r = (7 - W % 7) % 7
        if pad_r > 0:  # PAD
            x = x[:, :H, :W]
        return x


class SpatialBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attn = PreNorm(nn.LayerNorm(dim), WindowAttention())

    def forward(self, x, scale):
        if scale > 1:  # SCALE
            x = x * scale
        return self.attn(x, (x.shape[1], x.shape[2]))
)");
    EXPECT_FALSE(a.data_test("# PAD"));
    EXPECT_TRUE(a.data_test("# SCALE"));
}

}  // namespace

// Values::callee resolves a module call through `self` to the class's forward, a method call
// to the method, in and outside the compiled scope; a call of something else to nothing.
TEST(Values, CalleeOfModuleAndMethodCalls) {
    const Analysed a(R"(import torch
from torch import nn


class Inner(nn.Module):
    def forward(self, x):
        return x * 2


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def helper(self, x):
        return x + 1

    def forward(self, x):
        y = self.inner(x)
        return self.helper(y) + len(x)

    def unused(self, x):
        return self.helper(x)
)");
    const auto& file = a.project.files()[0];
    std::vector<std::string> got;
    syntax::walk(file.tree.root(), [&](const Node& n) {
        if (n.is("call")) {
            const auto ref = a.values.callee(0, n);
            got.push_back(std::string(n.field("function").text()) + " -> " +
                          (ref ? std::string(ref->node.field("name").text()) + ":" +
                                     std::to_string(ref->node.position().line)
                               : std::string("none")));
        }
        return true;
    });
    const std::vector<std::string> want{"super().__init__ -> none", "super -> none", "Inner -> none",
                                        "self.inner -> forward:6",   "self.helper -> helper:15",
                                        "len -> none",               "self.helper -> helper:15"};
    EXPECT_EQ(got, want);
}

// A name reassigned from a tensor to a tuple (`kv = kv.split(2)`, diffusers' Kolors ChatGLM
// get_prompt) holds the tuple where it is read: its callers test a tuple, not tensor data.
TEST(Values, AReadTakesTheAssignmentThatReachesIt) {
    const Analysed a(R"(import torch
from torch import nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Embedding(4, 8)

    def get_prompt(self, p):
        kv = self.enc(p)
        kv = kv.view(2, 4, 2)
        kv = kv.split(2)
        return kv  # R1

    def masks(self, x, kv):
        n = 0
        if kv:  # T1 a tuple from get_prompt: no data read
            n = kv[0][0].shape[0]
        y = x.sum()
        if y > 0:  # T2 a tensor
            n = n + 1
        y = len(kv)
        if y > 1:  # T3 reassigned to a number
            n = n + 1
        z = x.sum()
        if x.shape[0] > 1:
            z = 3
        if z > 0:  # T4 a tensor or a number: both reach
            n = n + 1
        return n

    def forward(self, x, p):
        kv = self.get_prompt(p)
        return self.masks(x, kv)
)");
    const analysis::Value r1 = a.values.eval(0, a.at("R1"));
    EXPECT_TRUE(r1.only(analysis::kSeq)) << analysis::describe(r1);
    EXPECT_FALSE(a.data_test("T1"));
    EXPECT_TRUE(a.data_test("T2"));
    EXPECT_FALSE(a.data_test("T3"));
    EXPECT_TRUE(a.data_test("T4"));
}

// isinstance tests narrow a name where they hold (monai's type conversion, transformers' csm
// `if isinstance(logits_to_keep, int): if logits_to_keep == 0:`), and where they fail.
TEST(Values, IsinstanceNarrowsTheNameInItsBranches) {
    const Analysed a(R"(import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x, data, keep):
        if isinstance(data, torch.Tensor):
            if data.sum() > 0:  # N1 a tensor
                x = x + 1
        elif isinstance(data, (float, int)):
            if data > 3:  # N2 a number
                x = x + 1
            data = torch.ones(2)
            if data.sum() > 1:  # N3 bound again: a tensor
                x = x + 1
        if isinstance(keep, int) and keep > 0:
            if keep == 0:  # N4 an int
                x = x + 1
        if not isinstance(keep, torch.Tensor):
            if keep:  # N5 not a tensor
                x = x + 1
        else:
            if keep:  # N6 the tensor
                x = x + 1
        return x
)");
    EXPECT_TRUE(a.data_test("N1"));
    EXPECT_FALSE(a.data_test("N2"));
    EXPECT_TRUE(a.data_test("N3"));
    EXPECT_FALSE(a.data_test("N4"));
    EXPECT_FALSE(a.data_test("N5"));
    EXPECT_TRUE(a.data_test("N6"));
}

// An item of a tuple is read at any integer literal index (syntax::int_value): at `0x1`, `-0b1`
// and `(1)` the items were joined before (issue 29), so a test of the int item read as data.
TEST(Values, ATupleItemIsReadAtAnyIntegerLiteral) {
    const Analysed a(R"(import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        pair = (x.sum(), 1)
        if pair[1] > 0:  # I1 decimal: the int
            x = x + 1
        if pair[0x1] > 0:  # I2 hex: the int
            x = x + 1
        if pair[-0b1] > 0:  # I3 negative binary: the int
            x = x + 1
        if pair[(1)] > 0:  # I4 parenthesized: the int
            x = x + 1
        if pair[1_0] > 0:  # I5 out of range: either item
            x = x + 1
        return x
)");
    EXPECT_FALSE(a.data_test("I1"));
    EXPECT_FALSE(a.data_test("I2"));
    EXPECT_FALSE(a.data_test("I3"));
    EXPECT_FALSE(a.data_test("I4"));
    EXPECT_TRUE(a.data_test("I5"));
}

TEST(Values, SplitsAreSequencesOfTensors) {
    // src/knowledge/tensor_ops.cpp's tensor_sequences: the split_with_sizes method and the
    // hsplit / vsplit / dsplit ops return tuples of tensors (torch 2.12.1), as split does.
    const Analysed a(R"(import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x):
        y = x.flip(0)
        if y.split_with_sizes([1, 3]):  # S1
            y = y * 2
        if torch.hsplit(y, 2):  # S2
            y = y * 2
        if y.vsplit(2):  # S3
            y = y * 2
        if y.split(2):  # S4
            y = y * 2
        if y.flip(0):  # S5
            y = y * 2
        return y


def run(m):
    return m(torch.zeros(4, 4))
)");
    for (const char* marker : {"S1", "S2", "S3", "S4"}) {
        const analysis::Value v = a.values.eval(0, a.at(marker));
        EXPECT_TRUE(v.only(analysis::kSeq)) << marker << " " << v.kinds;
    }
    EXPECT_TRUE(a.values.eval(0, a.at("S5")).tensor());
}

TEST(Values, ACalledParameterTakesTheFunctionItsCallersPass) {
    // Project::passed_callable: a parameter every call site fills with one known function
    // (a module-level def, through two levels, a lambda, `self.m`, a default) has that
    // function's value when called; call sites that disagree, or pass what the analysis
    // does not follow, leave it unknown, and unsettled_callable says why.
    const Analysed a(R"(import torch
from torch import nn


def decreasing(t):
    return (t[1:] < t[:-1]).all()


def increasing(t):
    return (t[1:] > t[:-1]).all()


def wide(t):
    return t.dim() > 1


def flip_if(x, check):
    flipped = check(x)
    if flipped:  # P1 decreasing, from the only call
        x = -x
    return x


def outer(x, predicate):
    return inner(x, predicate=predicate)


def inner(x, predicate):
    if predicate(x):  # P2 through two levels, by keyword
        x = x * 2
    return x


def by_lambda(x, rule):
    if rule(x):  # P3 a lambda
        x = x * 2
    return x


def by_default(x, test=decreasing):
    if test(x):  # P4 the default
        x = x * 2
    return x


def python_bool(x, check):
    if check(x):  # P5 a function returning a Python bool
        x = x.flatten()
    return x


def disagree(x, check):
    if check(x):  # P6 two functions
        x = -x
    return x


def unknown(x, check):
    if check(x):  # P7 an item of a list
        x = -x
    return x


CHECKS = [decreasing]


class Model(nn.Module):
    def below(self, t):
        return t.sum() < 0

    def apply(self, h, check):
        if check(h):  # P8 a bound method
            h = h - 1
        return h

    def forward(self, x):
        x = flip_if(x, decreasing)
        x = outer(x, decreasing)
        x = by_lambda(x, lambda v: v.sum() > 0)
        x = by_default(x)
        x = python_bool(x, wide)
        x = disagree(x, decreasing)
        x = disagree(x, increasing)
        x = unknown(x, CHECKS[0])
        return self.apply(x, self.below)
)");
    for (const char* marker : {"P1", "P2", "P3", "P4", "P8"}) EXPECT_TRUE(a.data_test(marker)) << marker;
    for (const char* marker : {"P5", "P6", "P7"}) EXPECT_FALSE(a.data_test(marker)) << marker;
    EXPECT_EQ(a.values.unsettled_callable(0, a.at("P1")), "");
    EXPECT_EQ(a.values.unsettled_callable(0, a.at("P5")), "");
    EXPECT_NE(a.values.unsettled_callable(0, a.at("P6")).find("different functions for `check` (`decreasing`, "
                                                              "`increasing`)"),
              std::string::npos)
        << a.values.unsettled_callable(0, a.at("P6"));
    EXPECT_NE(a.values.unsettled_callable(0, a.at("P7")).find("passes `CHECKS[0]`"), std::string::npos)
        << a.values.unsettled_callable(0, a.at("P7"));
    // The functions passed run under torch.compile: they are in scope.
    for (const char* name : {"decreasing", "increasing", "wide"}) {
        const auto& fns = a.project.files()[0].index.functions;
        EXPECT_TRUE(a.project.in_scope(0, fns.at(name).begin())) << name;
    }
}

// An annotation is a hint, a caller's argument is evidence: `t: int` of a compiled bound method
// is a tensor when the script that compiles it passes one (an item of a tensor attribute the
// object's __init__ makes), and stays a number when it passes ints or nothing analysed calls it.
TEST(Values, CallersOfACompiledBoundMethodBeatItsIntAnnotation) {
    const std::string scheduler = R"(import torch


class Scheduler:
    def __init__(self):
        self.timesteps = torch.arange(9, -1, -1)
        self.step_size = 3

    def step(self, x, t: int):
        prev = t - self.step_size
        if prev >= 0:  # T
            return x
        return x
)";
    const Analysed tensor(scheduler + R"(

def main():
    scheduler = Scheduler()
    step = torch.compile(scheduler.step)
    for t in scheduler.timesteps:
        step(1.0, t)
)");
    EXPECT_TRUE(tensor.data_test("# T"));
    const Analysed ints(scheduler + R"(

def main():
    scheduler = Scheduler.from_config({})
    step = torch.compile(scheduler.step)
    for t in range(10):
        step(1.0, t)
)");
    EXPECT_FALSE(ints.data_test("# T"));
    const Analysed uncalled(scheduler + R"(

def main():
    scheduler = Scheduler()
    return torch.compile(scheduler.step)
)");
    EXPECT_FALSE(uncalled.data_test("# T"));
}
