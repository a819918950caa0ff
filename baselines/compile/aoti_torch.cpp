// The compile baseline's worker side: loads the AOTInductor packages exported by export_cache (one per mode)
// and runs them on the measuring stream. The worker times every mode; the measure command keeps the faster.
#include <memory>

#include <fmt/format.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include "measure/impl_kind_torch.h"

namespace kf {

std::vector<prepared_impl> prepare_compile(const nlohmann::json& impl, const impl_context& ctx) {
  std::vector<prepared_impl> out;
  auto unavailable = [&](std::string mode, std::string why) {
    prepared_impl p;
    p.name = "compile";
    p.not_available = std::move(why);
    if (!mode.empty()) p.details["mode"] = mode;
    out.push_back(std::move(p));
  };
  // {"pt2": {"<case>": "/a.pt2"}} (one package) or {"pt2": {"<case>": {"<mode>": "/a.pt2"}}}.
  nlohmann::json packages = impl.value("pt2", nlohmann::json::object()).value(ctx.c.name, nlohmann::json());
  if (packages.is_string()) packages = nlohmann::json{{"default", packages}};
  nlohmann::json skipped = impl.value("skipped", nlohmann::json::object()).value(ctx.c.name, nlohmann::json::object());
  for (auto& [mode, why] : skipped.items()) unavailable(mode, why.is_string() ? why.get<std::string>() : why.dump());
  if (!packages.is_object()) {
    if (out.empty()) unavailable("", fmt::format("skipped: no AOTInductor package for case {}", ctx.c.name));
    return out;
  }
  for (auto& [mode, path] : packages.items()) {
    if (!path.is_string()) throw user_error(fmt::format("impl compile: pt2[{}][{}] is not a path", ctx.c.name, mode));
    prepared_impl p;
    p.name = "compile";
    p.details["mode"] = mode;
    p.details["pt2"] = path;
    p.description = fmt::format("torch.compile (AOTInductor, mode {})", mode);
    std::shared_ptr<torch::inductor::AOTIModelPackageLoader> loader;
    try {
      // Single-threaded runner: no per-run event bookkeeping, so it can be captured into a CUDA graph.
      loader = std::make_shared<torch::inductor::AOTIModelPackageLoader>(
          path.get<std::string>(), "model", /*run_single_threaded=*/true, /*num_runners=*/1,
          ctx.device.is_cuda() ? ctx.device.index() : c10::DeviceIndex(-1));
    } catch (const std::exception& e) {
      unavailable(mode, fmt::format("cannot load {}: {}", path.get<std::string>(), e.what()));
      continue;
    }
    std::vector<at::Tensor> inputs = ctx.inputs;
    c10::Device device = ctx.device;
    p.launch = [loader, inputs, device](void* stream) {
      return run_on_stream(stream, device, [&] { loader->run(inputs, stream); });
    };
    out.push_back(std::move(p));
  }
  if (out.empty()) unavailable("", fmt::format("skipped: no AOTInductor package for case {}", ctx.c.name));
  return out;
}

}  // namespace kf
