// The knowledge layer (knowledge.hpp): the facts where two rules' lists once disagreed, answered
// once. Whether each entry exists in torch is tests/python/test_knowledge.py's.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "graphmend/knowledge.hpp"

using namespace graphmend;

TEST(Knowledge, SizeFactoriesAndWhichArgumentsAreSizes) {
    for (const char* name : {"arange", "zeros", "linspace", "logspace", "eye", "randperm", "randint"}) {
        EXPECT_TRUE(knowledge::size_factory(name)) << name;
    }
    EXPECT_FALSE(knowledge::size_factory("one_hot"));  // torch.nn.functional's, not a torch factory
    const auto* logspace = knowledge::size_arguments("logspace");
    ASSERT_NE(logspace, nullptr);
    EXPECT_EQ(logspace->position, 2);
    EXPECT_EQ(logspace->keyword, "steps");
    EXPECT_EQ(knowledge::size_arguments("randint")->position, -1);
    EXPECT_EQ(knowledge::size_arguments("one_hot")->keyword, "num_classes");
    EXPECT_EQ(knowledge::size_arguments("zeros_like"), nullptr);
    for (const char* name : {"eye", "one_hot", "view", "pad", "topk"}) EXPECT_TRUE(knowledge::shape_call(name)) << name;
    EXPECT_FALSE(knowledge::shape_call("range"));  // a Python builtin: GM401's own
}

TEST(Knowledge, CustomOpsWithDataDependentShapes) {
    EXPECT_TRUE(knowledge::dynamic_shape_call("torchvision.ops.nms"));
    EXPECT_TRUE(knowledge::dynamic_shape_call("torchvision.ops.batched_nms"));
    EXPECT_TRUE(knowledge::dynamic_shape_call("torch.ops.torchvision.nms"));
    EXPECT_TRUE(knowledge::dynamic_shape_call("torch.ops.torchvision.nms.default"));
    EXPECT_FALSE(knowledge::dynamic_shape_call("torch.ops.torchvision.roi_align"));
    EXPECT_FALSE(knowledge::dynamic_shape_call("torch.nonzero"));  // dynamic_shape_op's, by name
    EXPECT_TRUE(knowledge::dynamic_shape_op("nonzero"));
}

TEST(Knowledge, FreshTensorsByNameFunctionAndMethod) {
    for (const char* name : {"zeros_like", "arange", "eye", "repeat", "clone", "new_zeros"}) {
        EXPECT_TRUE(knowledge::fresh_tensor(name)) << name;
    }
    EXPECT_TRUE(knowledge::allocating_function("torch.clone"));
    EXPECT_TRUE(knowledge::allocating_function("torch.eye"));
    EXPECT_FALSE(knowledge::allocating_function("torch.repeat"));  // a Tensor method only
    EXPECT_FALSE(knowledge::allocating_function("zeros"));
    EXPECT_TRUE(knowledge::allocating_method("repeat"));
    EXPECT_FALSE(knowledge::allocating_method("zeros"));
}

TEST(Knowledge, AliasingByDtype) {
    EXPECT_TRUE(knowledge::shares_storage("unfold", "int64"));
    EXPECT_TRUE(knowledge::shares_storage("numpy", "int64"));
    EXPECT_TRUE(knowledge::shares_storage("long", "int64"));
    EXPECT_FALSE(knowledge::shares_storage("int", "int64"));    // an int32 copy
    EXPECT_FALSE(knowledge::shares_storage("float", "int64"));  // a float32 copy
    EXPECT_FALSE(knowledge::shares_storage("view_as_real", "complex64"));  // a torch function only
    EXPECT_TRUE(knowledge::may_alias("float"));
    EXPECT_TRUE(knowledge::may_alias("view_as_real"));
    EXPECT_FALSE(knowledge::may_alias("numpy"));  // no tensor
    EXPECT_TRUE(knowledge::view_attribute("mT"));
}

TEST(Knowledge, RandomAndImpureOps) {
    for (const char* name : {"randn", "dropout2d", "alpha_dropout", "rrelu", "uniform_"}) {
        EXPECT_TRUE(knowledge::random_op(name)) << name;
        EXPECT_TRUE(knowledge::impure_torch(name)) << name;
    }
    for (const char* name : {"manual_seed", "save", "empty"}) {
        EXPECT_FALSE(knowledge::random_op(name)) << name;
        EXPECT_TRUE(knowledge::impure_torch(name)) << name;
    }
}

TEST(Knowledge, ValueReads) {
    for (const char* name : {"sum", "argmax", "logical_not", "item", "equal", "allclose"}) {
        EXPECT_TRUE(knowledge::reads_values(name)) << name;
    }
    EXPECT_TRUE(knowledge::value_reduction("argmax"));
    for (const char* name : {"item", "equal", "allclose"}) {
        EXPECT_FALSE(knowledge::value_reduction(name)) << name;  // a Python value, not a tensor
    }
}

TEST(Knowledge, PointwiseOps) {
    for (const char* name : {"clip", "logical_not", "maximum", "float", "to"}) {
        EXPECT_TRUE(knowledge::elementwise_method(name)) << name;
    }
    for (const char* name : {"log1p", "maximum", "softmax", "cumsum"}) {
        EXPECT_TRUE(knowledge::same_layout_method(name)) << name;
    }
    EXPECT_FALSE(knowledge::same_layout_method("float"));  // a conversion changes the dtype
    EXPECT_FALSE(knowledge::elementwise_method("softmax"));  // along a dimension
    EXPECT_FALSE(knowledge::elementwise_method("gelu"));     // no Tensor method
    EXPECT_TRUE(knowledge::elementwise_function("gelu"));    // torch.nn.functional.gelu
    EXPECT_TRUE(knowledge::elementwise_function("round"));
    EXPECT_FALSE(knowledge::elementwise_function("float"));  // torch.float is a dtype
    EXPECT_TRUE(knowledge::same_layout_function("cos"));
    EXPECT_FALSE(knowledge::same_layout_function("gelu"));   // not torch.gelu
    EXPECT_TRUE(knowledge::broadcast_method("maximum"));
    EXPECT_FALSE(knowledge::broadcast_method("exp"));
}

TEST(Knowledge, PureOps) {
    for (const char* name : {"erf", "trunc", "flip", "not_equal", "matmul", "zeros", "float", "sum"}) {
        EXPECT_TRUE(knowledge::pure_op(name)) << name;
    }
    for (const char* name : {"clamp_", "randn", "empty", "new_empty", "print"}) {
        EXPECT_FALSE(knowledge::pure_op(name)) << name;
    }
}

TEST(Knowledge, ModuleKindsNest) {
    EXPECT_TRUE(knowledge::elementwise_module("Hardswish"));
    EXPECT_TRUE(knowledge::rowwise_module("Hardswish"));
    EXPECT_TRUE(knowledge::stateless_module("Hardswish"));
    EXPECT_TRUE(knowledge::tensor_module("Hardswish"));
    EXPECT_FALSE(knowledge::elementwise_module("Linear"));
    EXPECT_TRUE(knowledge::rowwise_module("Linear"));
    EXPECT_TRUE(knowledge::stateless_module("GLU"));
    EXPECT_FALSE(knowledge::rowwise_module("Conv2d"));
    EXPECT_TRUE(knowledge::stateless_module("Conv2d"));
    EXPECT_FALSE(knowledge::stateless_module("Dropout"));
    EXPECT_TRUE(knowledge::tensor_module("Dropout"));
    EXPECT_FALSE(knowledge::tensor_module("LSTM"));
}

TEST(Knowledge, InPlace) {
    EXPECT_TRUE(knowledge::in_place("add_"));
    EXPECT_TRUE(knowledge::in_place("masked_fill_"));
    EXPECT_FALSE(knowledge::in_place("add"));
    EXPECT_FALSE(knowledge::in_place("__add__"));
}

TEST(Knowledge, PureBuiltins) {
    for (const char* name : {"len", "slice", "round", "sum", "zip", "all", "str"}) {
        EXPECT_TRUE(knowledge::pure_builtin(name)) << name;
    }
    EXPECT_FALSE(knowledge::pure_builtin("print"));
    EXPECT_FALSE(knowledge::pure_builtin("setattr"));
}

TEST(Knowledge, LoggersAndWarnings) {
    using knowledge::LoggerFactory;
    EXPECT_EQ(knowledge::logger_factory("logging", "getLogger"), LoggerFactory::Logger);
    EXPECT_EQ(knowledge::logger_factory("logging", "get_logger"), LoggerFactory::Unknown);
    EXPECT_EQ(knowledge::logger_factory("transformers.utils.logging", "get_logger"), LoggerFactory::Logger);
    EXPECT_EQ(knowledge::logger_factory("diffusers.utils.logging", "get_logger"), LoggerFactory::Logger);
    EXPECT_EQ(knowledge::logger_factory("accelerate.logging", "get_logger"), LoggerFactory::NotLogger);
    EXPECT_EQ(knowledge::logger_factory("accelerate", "get_logger"), LoggerFactory::NotLogger);
    EXPECT_EQ(knowledge::logger_factory("loguru", "get_logger"), LoggerFactory::Unknown);
    EXPECT_EQ(knowledge::logger_factory("transformers.utils.logging", "info"), LoggerFactory::Unknown);
    EXPECT_TRUE(knowledge::logger_method("warning_once"));
    EXPECT_FALSE(knowledge::logger_method("setLevel"));
    EXPECT_TRUE(knowledge::warning_function("warnings", "warn"));
    EXPECT_FALSE(knowledge::warning_function("warnings", "filterwarnings"));
}

TEST(Knowledge, DynamoApis) {
    EXPECT_TRUE(knowledge::compile_api("torch.compile", false));
    EXPECT_FALSE(knowledge::compile_api("torch._dynamo.optimize", false));
    EXPECT_TRUE(knowledge::compile_api("torch._dynamo.optimize", true));
    EXPECT_TRUE(knowledge::untraced_api("torch._dynamo.eval_frame.disable"));  // torch 2.0-2.1's spelling
    EXPECT_TRUE(knowledge::opaque_api("torch.compiler.allow_in_graph"));
    EXPECT_TRUE(knowledge::other_torch_module("torch.ao.nn.quantized.Linear"));
    EXPECT_TRUE(knowledge::builtin_class("KeyError"));
    EXPECT_TRUE(knowledge::builtin_class("ExceptionGroup"));
    EXPECT_FALSE(knowledge::builtin_class("Module"));
}

TEST(Knowledge, EveryTableIsNamedSortedAndSaysWhereEachEntryIs) {
    std::set<std::string> names;
    for (const knowledge::Table& t : knowledge::tables()) {
        EXPECT_TRUE(names.insert(std::string(t.name)).second) << t.name;
        EXPECT_FALSE(t.source.empty()) << t.name;
        EXPECT_FALSE(t.names.empty()) << t.name;
        for (std::size_t i = 0; i < t.names.size(); ++i) {
            EXPECT_NE(t.names[i].where, 0U) << t.name << ": " << t.names[i].name;
            if (i > 0) {
                EXPECT_LT(t.names[i - 1].name, t.names[i].name) << t.name;
            }
        }
    }
}
