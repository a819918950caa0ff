// Writing a workload spec as YAML (capture/spec_yaml.h): every bundled spec reads back as itself.
#include <functional>
#include <limits>

#include <gtest/gtest.h>

#include "capture/spec_yaml.h"
#include "spec/spec_parse.h"

using namespace kf;
using namespace kf::capture;

namespace {

// The spec as JSON without what the file itself decides (locations, its path and hash).
nlohmann::json comparable(const workload_spec& s) {
  nlohmann::json j = to_json(s);
  j.erase("path");
  j.erase("hash");
  std::function<void(nlohmann::json&)> strip = [&](nlohmann::json& v) {
    if (v.is_object()) {
      v.erase("loc");
      for (auto& [k, e] : v.items()) strip(e);
    } else if (v.is_array()) {
      for (auto& e : v) strip(e);
    }
  };
  strip(j);
  return j;
}

}  // namespace

TEST(capture_spec_yaml, every_bundled_spec_reads_back_as_itself) {
  const auto files = find_specs(std::string(KFORGE_SOURCE_DIR) + "/workloads");
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    workload_spec original;
    ASSERT_TRUE(parse_spec(f, &original).empty()) << f;
    const std::string text = spec_yaml(original, {{"a comment", ""}, {}});
    workload_spec again;
    auto diags = parse_spec_text(text, std::filesystem::path(f).filename().string(), &again);
    std::string all;
    for (const auto& d : diags) all += d.str() + "\n";
    ASSERT_TRUE(diags.empty()) << f << ":\n" << all << text;
    EXPECT_EQ(comparable(again), comparable(original)) << f << ":\n" << text;
  }
}

TEST(capture_spec_yaml, numbers_read_back_as_the_same_double) {
  EXPECT_EQ(yaml_number(1e-5), "1e-05");
  EXPECT_EQ(yaml_number(static_cast<float>(1e-6)), "1e-06");  // a float32 eps, not 9.999999974752427e-07
  EXPECT_EQ(yaml_number(30), "30.0");
  EXPECT_EQ(yaml_number(0.125), "0.125");
  const double third = 1.0 / 3.0;
  EXPECT_EQ(std::stod(yaml_number(third)), third);
  EXPECT_EQ(std::stod(yaml_number(0.08838834764831845)), 0.08838834764831845);
  // finfo(float32).min, a masked_fill value: float's shortest text (-3.4028235e+38) reads back past float's range,
  // which torch refuses for a float32 fill; the double's text keeps it in range.
  const double lowest = std::numeric_limits<float>::lowest();
  EXPECT_EQ(std::stod(yaml_number(lowest)), lowest);
}
