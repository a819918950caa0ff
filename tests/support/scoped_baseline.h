// A baseline registered for one test (spec/baseline_registry.h) and removed at its end, so a fake baseline does
// not leak into the tests that run after it in the same process.
#pragma once
#include <string>
#include <utility>

#include "spec/baseline_registry.h"

namespace kf::test {

class scoped_baseline {
 public:
  explicit scoped_baseline(baseline b) : m_name(b.name) { register_baseline(std::move(b)); }
  ~scoped_baseline() { unregister_baseline(m_name); }
  scoped_baseline(const scoped_baseline&) = delete;
  scoped_baseline& operator=(const scoped_baseline&) = delete;

 private:
  std::string m_name;
};

}  // namespace kf::test
