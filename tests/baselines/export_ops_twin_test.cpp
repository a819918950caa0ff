// The compile baseline's Python op table (baselines/compile/export.py: make_ops' OPS and TENSOR_ARGS) against the
// C++ one (lib/spec/ops.cpp): an op added on one side only would make every export of a spec using it fail.
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "spec/ops.h"

namespace kf {
namespace {

// C++ ops that the compile baseline cannot export, each with the reason. Empty today: every op has a twin.
const std::map<std::string, std::string> k_not_exportable = {};

std::string export_py() {
  std::ifstream in(KFORGE_SOURCE_DIR "/baselines/compile/export.py");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The text from `start` to the first line, after it, that closes the block (`end` at the start of a line).
std::string block(const std::string& text, const std::string& start, const std::string& end) {
  auto from = text.find(start);
  if (from == std::string::npos) return "";
  auto to = text.find("\n" + end, from);
  return text.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

// make_ops' table: the keys of the dict it returns ("name": fn, one per line, 8 spaces in).
std::set<std::string> python_ops(const std::string& text) {
  std::string table = block(block(text, "def make_ops(torch):", "def "), "    return {", "    }");
  std::set<std::string> out;
  std::regex key(R"x(\n        "(\w+)":)x");
  for (std::sregex_iterator it(table.begin(), table.end(), key), e; it != e; ++it) out.insert((*it)[1]);
  return out;
}

// TENSOR_ARGS = {"op": ["arg", ...], ...}: the arguments that name input tensors, per op.
std::map<std::string, std::set<std::string>> python_tensor_args(const std::string& text) {
  std::string table = block(text, "TENSOR_ARGS = {", "\n");
  std::map<std::string, std::set<std::string>> out;
  std::regex entry(R"x("(\w+)": \[([^\]]*)\])x"), name(R"x("(\w+)")x");
  for (std::sregex_iterator it(table.begin(), table.end(), entry), e; it != e; ++it) {
    std::string args = (*it)[2];
    auto& names = out[(*it)[1]];
    for (std::sregex_iterator a(args.begin(), args.end(), name); a != e; ++a) names.insert((*a)[1]);
  }
  return out;
}

TEST(export_ops, every_cpp_op_has_a_python_twin_or_a_reason) {
  auto py = python_ops(export_py());
  ASSERT_FALSE(py.empty()) << "no OPS table found in baselines/compile/export.py (make_ops' return {...})";
  for (const op_def& op : op_table()) {
    if (k_not_exportable.count(op.name)) {
      EXPECT_FALSE(py.count(op.name)) << op.name << " is exported now: drop it from k_not_exportable";
      continue;
    }
    EXPECT_TRUE(py.count(op.name)) << op.name << " (lib/spec/ops.cpp) has no entry in export.py's OPS table: "
                                   << "add one, or list it in k_not_exportable with the reason";
  }
  for (auto& name : py) EXPECT_TRUE(find_op(name)) << "export.py's OPS has " << name << ", which lib/spec/ops.cpp lacks";
}

TEST(export_ops, tensor_arguments_agree) {
  auto py = python_tensor_args(export_py());
  ASSERT_FALSE(py.empty()) << "no TENSOR_ARGS found in baselines/compile/export.py";
  for (const op_def& op : op_table()) {
    std::set<std::string> cpp;
    for (auto& a : op.args)
      if (a.kind == arg_kind::tensor) cpp.insert(a.name);
    if (k_not_exportable.count(op.name)) continue;
    auto it = py.find(op.name);
    EXPECT_EQ(it == py.end() ? std::set<std::string>{} : it->second, cpp) << op.name << ": TENSOR_ARGS vs ops.cpp";
  }
}

}  // namespace
}  // namespace kf
