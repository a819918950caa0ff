// kforge capture: runs a model under the tracer (lib/capture/trace.py), finds the patterns of its operators that a
// workload spec expresses, merges their calls, ranks them by their share of the model's time, writes specs for the
// top N and prints a summary (lib/capture/). Exit 0 when it wrote its specs, 2 on a usage or environment error.
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "args.h"
#include "capture/capture.h"
#include "capture/render.h"
#include "capture/tracer.h"
#include "commands.h"
#include "exec/device.h"
#include "spec/spec_parse.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/term.h"

namespace kf {
namespace {

namespace fs = std::filesystem;

const std::vector<flag_def> k_flags = {
    {"model", true, "the model: FILE.py:FUNCTION, where FUNCTION returns (model, example_inputs)", "FILE.py:FUNCTION"},
    {"top", true, "write specs for the N workloads with the largest share of the time (default 5)", "N"},
    {"out", true, "the folder the specs go to (default ./captured)", "DIR"},
    {"device", true, "cpu, cuda, cuda:N or auto (default auto: cuda when a GPU is present)", "D"},
    {"json", true, "also write the summary as JSON to FILE", "FILE"},
    {"model-args", true, "keyword arguments for FUNCTION, k=v,... (Python literals: scale=0.05,layers=1)", "K=V,..."},
    {"iters", true, "timed passes under the profiler, the median kept (default 3)", "N"},
    {"python", true, "the Python interpreter with torch (default python3)", "PY"},
    {"trace", true, "keep the operator trace (JSON) at FILE", "FILE"},
    {"from-trace", true, "analyze a trace kept with --trace instead of running the model", "FILE"},
};

capture::trace get_trace(const args& a) {
  if (auto f = a.get("from-trace")) {
    if (a.has("model")) throw user_error("--from-trace reads a kept trace: give it or --model, not both");
    return capture::read_trace(*f);
  }
  auto model = a.get("model");
  if (!model) throw user_error("kforge capture needs --model FILE.py:FUNCTION (or --from-trace FILE)");
  capture::tracer_options o;
  o.model = *model;
  o.model_args = a.get_or("model-args", "");
  o.python = a.get_or("python", o.python);
  o.iters = a.get_int("iters", 3);
  if (o.iters < 1) throw user_error(fmt::format("--iters {}: expected at least 1", o.iters));
  device_choice dev = choose_device(a.get_or("device", "auto"));
  o.device = dev.id.kind == device_kind::cpu ? "cpu" : dev.id.str();
  term::say("{}", dev.why);
  term::step(fmt::format("tracing {} on {} ({} timed passes)", o.model, o.device, o.iters));
  if (auto keep = a.get("trace")) {
    capture::trace t = capture::run_tracer(o, *keep);
    term::end_progress();
    return t;
  }
  temp_dir tmp("kforge-capture");
  capture::trace t = capture::run_tracer(o, tmp.path() / "trace.json");
  term::end_progress();
  return t;
}

}  // namespace

std::string capture_help() {
  return "usage: kforge capture --model FILE.py:FUNCTION [--top N] [--out DIR] [--device cpu|cuda] [--json FILE]\n\n"
         "Runs the model eagerly under PyTorch's dispatcher tracing and the profiler, groups its operators into the\n"
         "patterns a workload spec expresses (a norm and its activation, a residual add and the norm after it, a\n"
         "softmax with its scale, mask and cast, a chain of elementwise ops, a pooling and its flatten), merges\n"
         "repeated calls into one workload with a case per shape (symbols where the sizes vary), ranks them by their\n"
         "share of the model's time, and writes specs for the top N to DIR, each saying where in the model it came\n"
         "from. The summary lists the operators no spec expresses, with their share. FUNCTION returns (model,\n"
         "example_inputs) and is called with device=... when it takes it.\n\noptions:\n" +
         flags_help(k_flags) + "\nexit codes: 0 specs written, 2 usage or environment error (or the model failed)\n";
}

int capture_run(const std::vector<std::string>& argv) {
  args a(argv, k_flags);
  if (!a.positional().empty()) throw user_error(fmt::format("unexpected argument `{}` (see kforge capture --help)", a.positional()[0]));
  const int top = a.get_int("top", 5);
  if (top < 0) throw user_error(fmt::format("--top {}: expected 0 or more", top));
  const fs::path out_dir = a.get_or("out", "captured");

  const capture::capture_result r = capture::analyze(get_trace(a));
  capture::written_files written;
  int invalid = 0;
  for (size_t i = 0; i < r.workloads.size() && i < static_cast<size_t>(top); ++i) {
    const std::string text = capture::captured_spec_text(r, i);
    const fs::path path = out_dir / (r.workloads[i].spec.name + ".yaml");
    // What kforge writes must be a spec kforge reads: a broken one is reported and not written.
    workload_spec check;
    auto diags = parse_spec_text(text, path.string(), &check);
    if (!diags.empty()) {
      ++invalid;
      for (auto& d : diags) term::say("{} kforge capture wrote an invalid spec (a bug): {}", term::red("error:"), d.str());
      continue;
    }
    write_file_atomic(path, text);
    written[i] = path.string();
  }
  std::fputs(capture::summary_table(r, written).c_str(), stdout);
  if (auto j = a.get("json")) write_file_atomic(*j, capture::summary_json(r, written).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  return invalid ? exit_usage : exit_ok;
}

}  // namespace kf
