// Running the tracer: python3 lib/capture/trace.py on the user's model (FILE.py:FUNCTION), which writes the
// trace JSON that trace.h reads. Located and run the way the compile baseline runs baselines/compile/export.py:
// from the source tree, through run_process, never through a shell.
#pragma once
#include <chrono>
#include <filesystem>
#include <string>

#include "capture/trace.h"

namespace kf::capture {

struct tracer_options {
  std::string python = "python3";        // a name on PATH or a path
  std::filesystem::path script;          // empty: lib/capture/trace.py of the source tree
  std::string model;                     // FILE.py:FUNCTION
  std::string device = "cpu";            // cpu, cuda or cuda:N
  std::string model_args;                // k=v,... passed to FUNCTION
  int warmup = 1;
  int iters = 3;
  std::chrono::seconds timeout{1800};    // a full-size model on the cpu takes minutes
};

std::filesystem::path default_tracer_script();

// Runs the tracer, writing the trace to `out`, and reads it. A model that cannot be loaded or fails to run is the
// user's (user_error, with the tracer's last lines); no python, no torch or a tracer that crashes is the
// environment's (infra_error).
trace run_tracer(const tracer_options& o, const std::filesystem::path& out);

}  // namespace kf::capture
