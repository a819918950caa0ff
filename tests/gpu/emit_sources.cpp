// Writes CUDA family sources for the GPU harness (tests/gpu/family_bench.py), without a GPU and without the
// spec parser: a request file lists cases (inputs, graph in the spec's JSON form, family, knob overrides).
// Usage: emit_sources REQUEST.json OUT_DIR
// Writes OUT_DIR/<case>__v<i>.cu (v0 is the family's default for the case, later ones the default with the
// request's overrides) and OUT_DIR/manifest.json: {case: [{file, knobs}], ...}; invalid variants are listed
// with their reason instead of a file.
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "search/family.h"
#include "spec/spec.h"

using namespace kf;
using json = nlohmann::json;

namespace {

workload_spec spec_from_request(const json& c) {
  workload_spec s;
  s.name = c.at("name").get<std::string>();
  for (auto& i : c.at("inputs")) {
    input_spec in;
    in.name = i.at("name").get<std::string>();
    for (auto d : i.at("shape")) in.shape.push_back(dim{"", d.get<int64_t>()});
    in.type = *parse_dtype(i.at("dtype").get<std::string>());
    in.memory_format = i.value("memory_format", "contiguous");
    s.inputs.push_back(in);
  }
  for (auto& op : c.at("graph")) {
    op_call call;
    call.op = op.begin().key();
    call.args = op.begin().value();
    s.graph.push_back(call);
  }
  case_spec only;
  only.name = "only";
  only.gate = true;
  s.cases.push_back(only);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: emit_sources REQUEST.json OUT_DIR\n";
    return 2;
  }
  json req = json::parse(std::ifstream(argv[1]));
  json manifest = json::object();
  const std::string dir = argv[2];
  int failures = 0;
  for (auto& c : req.at("cases")) {
    const auto name = c.at("name").get<std::string>();
    const auto fam_name = c.at("family").get<std::string>();
    const family* f = find_family(fam_name, device_kind::cuda);
    if (!f) {
      std::cerr << name << ": no family " << fam_name << "\n";
      return 2;
    }
    auto spec = spec_from_request(c);
    std::string why;
    if (!f->covers(spec, &why)) {
      std::cerr << name << ": " << fam_name << " does not cover it: " << why << "\n";
      ++failures;
      continue;
    }
    const knob_values def = f->default_variant(spec);
    std::vector<knob_values> variants{def};
    for (auto& o : c.value("variants", json::array())) {
      knob_values v = def;
      for (auto& [k, val] : o.items()) v[k] = val.get<std::string>();
      variants.push_back(v);
    }
    json list = json::array();
    for (size_t i = 0; i < variants.size(); ++i) {
      json entry{{"knobs", variants[i]}};
      if (!f->valid(variants[i], spec, &why)) {
        entry["invalid"] = why;
      } else {
        const auto file = fmt::format("{}__v{}.cu", name, i);
        std::ofstream(dir + "/" + file) << f->emit(spec, variants[i]);
        entry["file"] = file;
      }
      list.push_back(entry);
    }
    manifest[name] = list;
  }
  std::ofstream(dir + "/manifest.json") << manifest.dump(1);
  return failures ? 1 : 0;
}
