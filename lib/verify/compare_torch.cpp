#include "verify/compare_torch.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "spec/ops_torch.h"
#include "verify/harness_torch.h"

namespace kf {

std::string index_text(int64_t flat, at::IntArrayRef sizes) {
  std::vector<int64_t> idx(sizes.size());
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    int64_t s = std::max<int64_t>(sizes[d], 1);
    idx[d] = flat % s;
    flat /= s;
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

std::string output_comparison::match_text() const {
  if (out_of_range) return index_problem;
  return fmt::format("max error {:.3g} of tolerance (rtol {:.3g}, atol {:.3g}: {}) at {}", ratio, tol.tol.rtol,
                     tol.tol.atol, tol.why, worst.empty() ? "-" : worst);
}

nlohmann::json output_comparison::numbers() const {
  return {{"numel", numel}, {"unwritten", unwritten}, {"nan_inf_mismatches", nan_inf_mismatches},
          {"error_ratio", std::isfinite(ratio) ? ratio : 1e300}, {"max_abs_err", std::isfinite(max_abs_err) ? max_abs_err : 1e300},
          {"rtol", tol.tol.rtol}, {"atol", tol.tol.atol}, {"eager_error_ratio", eager_ratio},
          {"tolerance_clipped", tol.clipped}, {"bad_indices", out_of_range}};
}

namespace {

// max over `mask` of |a - r| / (atol + rtol |r|); exact comparison where the tolerance is zero.
std::pair<double, int64_t> max_ratio(const at::Tensor& a, const at::Tensor& r, const at::Tensor& mask, tolerance t) {
  if (!mask.any().item<bool>()) return {0.0, -1};
  auto diff = (a - r).abs();
  auto denom = t.atol + t.rtol * r.abs();
  at::Tensor ratio = (t.atol == 0 && t.rtol == 0)
                         ? diff.gt(0).to(at::kDouble) * std::numeric_limits<double>::infinity()
                         : diff / denom;
  ratio = at::where(mask, ratio, at::zeros_like(ratio));
  ratio = at::nan_to_num(ratio, 0.0, std::numeric_limits<double>::infinity());
  auto flat = ratio.reshape(-1);
  int64_t pos = flat.argmax().item<int64_t>();
  return {flat[pos].item<double>(), pos};
}

std::string value_text(double v) { return fmt::format("{:.6g}", v); }

}  // namespace

output_comparison compare_output(const at::Tensor& out, const at::Tensor& ref, const at::Tensor& eager, dtype t,
                                 const tolerance_spec& spec_tol) {
  output_comparison c;
  c.numel = out.numel();
  auto unwritten = poison_mask(out).reshape(out.sizes());
  c.unwritten = unwritten.sum().item<int64_t>();
  if (c.unwritten) c.first_unwritten = index_text(unwritten.reshape(-1).nonzero()[0][0].item<int64_t>(), out.sizes());

  auto o = out.to(at::kDouble).contiguous();
  auto r = ref.to(at::kDouble).contiguous();
  auto e = eager.to(at::kDouble).contiguous();
  auto written = unwritten.logical_not();
  // The reference as the output's type stores it: a value beyond the type's range is an infinity there (eager's
  // float32 exp(100) is inf too), so an infinity of the same sign is right and a finite value is not.
  auto stored = is_floating(t) && t != dtype::float64 ? r.to(to_scalar_type(t)).to(at::kDouble) : r;
  auto bad = (o.isnan() != r.isnan()) | (stored.isinf() & o.ne(stored)) | (o.isinf() & o.ne(stored));
  bad = bad & written;
  c.nan_inf_mismatches = bad.sum().item<int64_t>();
  if (c.nan_inf_mismatches) {
    int64_t pos = bad.reshape(-1).nonzero()[0][0].item<int64_t>();
    c.first_nan_inf = fmt::format("{}: got {}, reference {}", index_text(pos, out.sizes()),
                                  value_text(o.reshape(-1)[pos].item<double>()), value_text(r.reshape(-1)[pos].item<double>()));
  }
  auto finite = stored.isfinite() & o.isfinite() & written;
  tolerance d = default_tolerance(t);
  c.eager_ratio = max_ratio(e, r, r.isfinite() & e.isfinite(), d).first;
  c.tol = effective_tolerance(t, spec_tol, c.eager_ratio);
  auto [ratio, pos] = max_ratio(o, r, finite, c.tol.tol);
  c.ratio = ratio;
  if (pos >= 0) {
    double ov = o.reshape(-1)[pos].item<double>(), rv = r.reshape(-1)[pos].item<double>();
    c.max_abs_err = std::abs(ov - rv);
    c.worst = fmt::format("{}: got {}, reference {}", index_text(pos, out.sizes()), value_text(ov), value_text(rv));
  }
  return c;
}

output_comparison compare_indices(const at::Tensor& indices, const at::Tensor& source, int64_t dim,
                                  const at::Tensor& ref_values, const at::Tensor& eager_values, dtype values_type,
                                  const tolerance_spec& spec_tol) {
  output_comparison c;
  c.numel = indices.numel();
  auto unwritten = poison_mask(indices).reshape(indices.sizes());
  c.unwritten = unwritten.sum().item<int64_t>();
  if (c.unwritten) c.first_unwritten = index_text(unwritten.reshape(-1).nonzero()[0][0].item<int64_t>(), indices.sizes());
  auto idx = indices.to(at::kLong);
  int64_t n = source.size(dim);
  auto outside = (idx.lt(0) | idx.ge(n)) & unwritten.logical_not();
  c.out_of_range = outside.sum().item<int64_t>();
  if (c.out_of_range) {
    int64_t pos = outside.reshape(-1).nonzero()[0][0].item<int64_t>();
    c.index_problem = fmt::format("index {} at {} is outside [0, {})", idx.reshape(-1)[pos].item<int64_t>(),
                                  index_text(pos, indices.sizes()), n);
    return c;
  }
  if (c.unwritten) return c;  // poison indices are out of range; the all_written rule reports them
  if (idx.size(dim) > 1) {
    auto sorted = std::get<0>(idx.sort(dim));
    auto repeats = sorted.narrow(dim, 1, idx.size(dim) - 1).eq(sorted.narrow(dim, 0, idx.size(dim) - 1));
    c.out_of_range = repeats.sum().item<int64_t>();
    if (c.out_of_range) {
      c.index_problem = fmt::format("{} index repeated within a row (topk selects distinct elements)", c.out_of_range);
      return c;
    }
  }
  auto picked = source.to(at::kDouble).gather(dim, idx);
  output_comparison v = compare_output(picked, ref_values, eager_values, values_type, spec_tol);
  c.nan_inf_mismatches = v.nan_inf_mismatches;
  c.first_nan_inf = v.first_nan_inf;
  c.ratio = v.ratio;
  c.max_abs_err = v.max_abs_err;
  c.worst = v.worst.empty() ? "" : "values selected " + v.worst;
  c.tol = v.tol;
  c.eager_ratio = v.eager_ratio;
  return c;
}

}  // namespace kf
