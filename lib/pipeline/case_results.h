// A measure reply (pipeline/measure_call.h) as the run's record: one case_result per timed case, implementations
// in the order asked, each summarized (report/summarize.h) with its floor. What `kforge run` stores and what
// the gate, and the search's verdict on its winner, judge.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "pipeline/measure_call.h"
#include "report/run_result.h"

namespace kf::pipeline {

// `impls`: the names reported, in order; `skipped`: implementations not sent to the worker, with why (a
// baseline whose package could not be exported). An implementation the worker said nothing about is skipped
// ("the worker reported nothing for it").
std::vector<case_result> case_results(const measure_reply& reply, const std::vector<std::string>& cases,
                                      const std::vector<std::string>& impls,
                                      const std::map<std::string, std::string>& skipped = {});

// Every case marked as the kernel's failure (the kernel crashed or failed while timed): the gate fails it.
std::vector<case_result> kernel_failed_cases(const std::vector<std::string>& cases, const std::string& why);

}  // namespace kf::pipeline
