#include "pipeline/case_results.h"

#include "report/summarize.h"

namespace kf::pipeline {
using json = nlohmann::json;

namespace {

sample_series record_of(const series& s) {
  sample_series r;
  r.samples_us = s.samples_us;
  r.discarded = s.discarded;
  return r;
}

impl_result result_of(const measure_reply& reply, const std::string& impl, const std::string& case_name,
                      const std::map<std::string, std::string>& skipped) {
  impl_result i;
  i.impl = impl;
  if (auto s = skipped.find(impl); s != skipped.end()) {
    i.status = impl_status::skipped;
    i.why = s->second;
    return i;
  }
  const timed* t = reply.find(impl, case_name);
  if (!t) {
    i.status = impl_status::skipped;
    i.why = "the worker reported nothing for it";
  } else if (!t->available) {
    i.status = impl_status::skipped;
    i.why = t->not_available;
  } else if (!t->error.empty()) {
    i.status = impl_status::failed;
    i.why = t->error;
  } else {
    i.description = t->description;
    if (t->details.is_object()) i.details = t->details;
    i.cold = record_of(t->cold);
    i.hot = record_of(t->hot);
    if (i.cold.empty()) {
      i.status = impl_status::failed;
      i.why = "no samples were kept";
    }
  }
  return i;
}

}  // namespace

std::vector<case_result> case_results(const measure_reply& reply, const std::vector<std::string>& cases,
                                      const std::vector<std::string>& impls,
                                      const std::map<std::string, std::string>& skipped) {
  std::vector<case_result> out;
  for (auto& name : cases) {
    case_result c;
    c.name = name;
    for (auto& impl : impls) c.impls.push_back(result_of(reply, impl, name, skipped));
    summarize_case(c);
    if (reply.floors.contains(name)) {
      const json& f = reply.floors[name];
      bool hot = c.metric == "hot";
      c.floor.bytes = f.value("bytes", 0.0);
      c.floor.bandwidth_floor_us = f.value("bandwidth_floor_us", 0.0);
      c.floor.physical_floor_us = f.value("physical_floor_us", 0.0);
      c.floor.launch_floor_us = hot ? f.value("launch_floor_hot_us", 0.0) : f.value("launch_floor_us", 0.0);
      c.floor.floor_us = hot ? f.value("floor_hot_us", 0.0) : f.value("floor_us", 0.0);
      summarize_case(c);  // the fraction of the floor
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<case_result> kernel_failed_cases(const std::vector<std::string>& cases, const std::string& why) {
  std::vector<case_result> out;
  for (auto& name : cases) {
    case_result c;
    c.name = name;
    impl_result failed;
    failed.impl = "kernel";
    failed.status = impl_status::failed;
    failed.why = why;
    c.impls.push_back(std::move(failed));
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace kf::pipeline
