// Compiled by ctest (CMakeLists.txt, the GrammarNames.*Compile* tests), once per macro: a node
// type or field name the tree-sitter-python grammar does not have must not compile.
#include "graphmend/syntax.hpp"

bool lookup(const graphmend::syntax::Node& n) {
#if defined(GRAPHMEND_MISSPELT_TYPE)
    return n.is("identifer");
#elif defined(GRAPHMEND_SUPERTYPE)
    return n.is("expression");  // a supertype: no node has it as its type
#elif defined(GRAPHMEND_MISSPELT_FIELD)
    return n.field("bodyy").valid();
#else
    return n.is("identifier") && n.is("is not") && n.field("body").valid();
#endif
}
