// The stored winners against the family table (search/stored_winner.h): each winner in workloads/ is exactly what
// its family emits today from the family, version and knobs its .json records, with the same in its header; a
// winner recorded at another version fails saying how to re-emit it; re-emitting keeps the winner's code path and
// provenance.
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/text_escape.h"
#include "search/stored_winner.h"
#include "spec/spec_parse.h"
#include "store/kernel_header.h"
#include "util/error.h"
#include "util/fs.h"

namespace kf {
namespace {
namespace fs = std::filesystem;
using ::testing::HasSubstr;

const fs::path k_workloads = fs::path(KFORGE_SOURCE_DIR) / "workloads";

TEST(stored_winners, each_is_what_its_family_emits_at_its_recorded_version) {
  int checked = 0;
  for (auto& path : find_specs(k_workloads.string())) {
    const workload_spec spec = load_spec(path);
    const fs::path dir = kernels_dir(spec.path, spec.name);
    if (!fs::is_directory(dir)) continue;
    for (auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() != ".json") continue;
      auto found = find_winner(dir, e.path().stem().string());
      ASSERT_TRUE(found.kernel.has_value() && !found.kernel->fallback) << e.path();
      const stored_kernel& k = *found.kernel;
      // The .json and the header say the same family, version and knobs (check_winner holds the rest: the version
      // is the family's, and re-emitting gives the source without its provenance lines).
      auto header = parse_kernel_header(read_file(k.source));
      ASSERT_TRUE(header.has_value()) << k.source << ": no kernel header; re-emit it with `kforge reemit " << spec.name
                                      << "`";
      EXPECT_EQ(header->family, k.meta.value("family", "")) << k.source;
      EXPECT_EQ(header->version, k.meta.value("family_version", 0)) << k.source;
      EXPECT_EQ(nlohmann::json(header->knobs), k.meta["knobs"]) << k.source;
      const winner_check c = check_winner(spec, k);
      EXPECT_TRUE(c.current) << c.why;
      ++checked;
    }
  }
  EXPECT_GE(checked, 16) << "the eight seed workloads store an H200 and a cpu winner each";
}

// A workload folder in a temp dir with one spec of workloads/ and a winner written by the test.
struct scratch_workload {
  temp_dir dir{"kf-stored-winners"};
  workload_spec spec;
  fs::path kernels;

  explicit scratch_workload(const std::string& name) {
    fs::create_directories(dir.path() / "workloads");
    fs::copy_file(k_workloads / (name + ".yaml"), dir.path() / "workloads" / (name + ".yaml"));
    spec = load_spec((dir.path() / "workloads" / (name + ".yaml")).string());
    kernels = kernels_dir(spec.path, spec.name);
    fs::create_directories(kernels);
  }
  stored_kernel write(const std::string& key, const std::string& source, const nlohmann::json& meta) {
    const fs::path src = kernels / (key + kernel_extension(key));
    write_file_atomic(src, source);
    write_file_atomic(fs::path(src).replace_extension(".json"), safe_dump(meta, 2));
    return *find_winner(kernels, key).kernel;
  }
  // A winner as `kforge search` writes it today.
  stored_kernel current(const std::string& key, const family& f, const knob_values& v) {
    const knob_values k = f.canonical_knobs(spec, v);
    return write(key, with_provenance(f.emit(spec, k), {"kforge winner: " + spec.name + " on " + key, "lineage: x"}),
                 {{"family", f.name()}, {"family_version", f.version()}, {"knobs", k}});
  }
};

TEST(stored_winners, a_winner_recorded_at_another_version_says_how_to_reemit_it) {
  scratch_workload w("qwen-router-softmax");
  const family& f = *find_family("row_softmax_cuda", device_kind::cuda);
  stored_kernel k = w.current("sm90-nvidia-h200", f, f.default_variant(w.spec));
  EXPECT_TRUE(check_winner(w.spec, k).current) << check_winner(w.spec, k).why;
  k.meta["family_version"] = f.version() + 1;
  winner_check c = check_winner(w.spec, k);
  EXPECT_FALSE(c.current);
  EXPECT_THAT(c.why, HasSubstr(fmt::format("version {}, and the family is at version {}", f.version() + 1, f.version())));
  EXPECT_THAT(c.why, HasSubstr("kforge reemit qwen-router-softmax"));
  k.meta.erase("family_version");
  c = check_winner(w.spec, k);
  EXPECT_THAT(c.why, HasSubstr("version 0 (none recorded: stored before families had versions)"));
  EXPECT_THAT(c.why, HasSubstr("kforge reemit qwen-router-softmax"));
}

TEST(stored_winners, header_json_and_code_must_agree) {
  scratch_workload w("qwen-router-softmax");
  const family& f = *find_family("row_softmax_cuda", device_kind::cuda);
  stored_kernel k = w.current("sm90-nvidia-h200", f, f.default_variant(w.spec));
  // The .json's knobs against the header's.
  stored_kernel other = k;
  other.meta["knobs"]["unroll"] = other.meta["knobs"]["unroll"] == "1" ? "2" : "1";
  EXPECT_THAT(check_winner(w.spec, other).why, HasSubstr("its source's header"));
  // Code that is not what the family emits at this version (edited, or the family changed without a new version).
  std::string text = read_file(k.source);
  text.replace(text.find("extern \"C\" int kf_launch"), 10, "extern \"C\" int  ");
  write_file_atomic(k.source, text);
  const winner_check c = check_winner(w.spec, k);
  EXPECT_FALSE(c.current);
  EXPECT_THAT(c.why, HasSubstr("bump its version()"));
}

// The layout of a winner stored before families had versions: provenance, the family and knobs listed again, a
// blank line, then the candidate's own header (lib/search/stored_winner.cpp reads it).
std::string legacy_source(const std::string& workload, const std::string& key, const knob_values& knobs) {
  std::string list;
  for (auto& [k, v] : knobs) list += " " + k + "=" + v;
  return fmt::format(
      "// kforge winner: {0} on {1}\n"
      "// kforge winner for {0} on {1}, found by `kforge search` (template proposer) on 2026-11-30T09:22:27Z\n"
      "// family: row_softmax_cuda\n// knobs:{2}\n// lineage: default -> template: chunks 8->4\n"
      "// measured: 18.24 us (geometric mean over gated cases), 4.89x eager\n\n"
      "// kforge candidate: family row_softmax_cuda (cuda), emitted by the template proposer.\nint old_code;\n",
      workload, key, list);
}

TEST(stored_winners, reemit_keeps_the_code_path_and_the_provenance) {
  scratch_workload w("gemma-attn-softmax");
  const family& f = *find_family("row_softmax_cuda", device_kind::cuda);
  knob_values old = f.default_variant(w.spec);
  old.erase("pdl");  // a knob the family gained after this winner was stored
  old["threads"] = "512";
  stored_kernel k = w.write("sm90-nvidia-h200", legacy_source(w.spec.name, "sm90-nvidia-h200", old),
                            {{"family", "row_softmax_cuda"}, {"knobs", old}, {"results", {{"time_us", 18.24}}}});
  EXPECT_THAT(check_winner(w.spec, k).why, HasSubstr("version 0"));

  const reemitted_winner r = reemit_winner(w.spec, k, "2026-12-02T00:00:00Z");
  EXPECT_EQ(r.from_version, 0);
  EXPECT_EQ(r.to_version, f.version());
  // pdl=0 is the code from before the knob (plain launches, no griddepcontrol.wait), not the default (1).
  EXPECT_EQ(r.knobs.at("pdl"), "0");
  EXPECT_EQ(r.filled.at("pdl"), "0 (the code before the knob)");
  EXPECT_EQ(r.knobs.at("threads"), "512");
  EXPECT_EQ(without_provenance(r.text), f.emit(w.spec, r.knobs));
  EXPECT_EQ(provenance_lines(r.text),
            (std::vector<std::string>{
                "kforge winner: gemma-attn-softmax on sm90-nvidia-h200",
                "found: by `kforge search` (template proposer) on 2026-11-30T09:22:27Z",
                "lineage: default -> template: chunks 8->4",
                "measured: 18.24 us (geometric mean over gated cases), 4.89x eager",
                fmt::format("re-emitted: by `kforge reemit` on 2026-12-02T00:00:00Z, row_softmax_cuda version {} from "
                            "version 0 (none recorded: stored before families had versions); knobs filled: pdl=0 (the "
                            "code before the knob); measured above is the earlier kernel's",
                            f.version())}));
  EXPECT_EQ(r.metadata["results"]["time_us"], 18.24);  // what it measured stays, said to be the earlier kernel's
  EXPECT_EQ(r.metadata["reemitted"][0]["from_version"], 0);
  EXPECT_EQ(r.metadata["reemitted"][0]["knobs_recorded"], nlohmann::json(old));

  stored_kernel again = w.write("sm90-nvidia-h200", r.text, r.metadata);
  EXPECT_TRUE(check_winner(w.spec, again).current) << check_winner(w.spec, again).why;
  // Re-emitting a re-emitted winner keeps every line and adds one.
  const reemitted_winner twice = reemit_winner(w.spec, again, "2026-12-03T00:00:00Z");
  EXPECT_EQ(provenance_lines(twice.text).size(), provenance_lines(r.text).size() + 1);
  EXPECT_EQ(twice.metadata["reemitted"].size(), 2u);
}

TEST(stored_winners, reemit_fills_a_knob_the_variant_does_not_read_with_the_families_value) {
  scratch_workload w("sd35-vae-groupnorm");
  const family& f = *find_family("group_norm_cuda", device_kind::cuda);
  knob_values old = f.default_variant(w.spec);
  ASSERT_EQ(old.at("strategy"), "stream");
  for (const char* gained : {"ring_kb", "ahead", "stages", "publish"}) old.erase(gained);
  stored_kernel k = w.write("sm90-nvidia-h200", "// kforge winner: sd35-vae-groupnorm on sm90-nvidia-h200\n\nint x;\n",
                            {{"family", "group_norm_cuda"}, {"knobs", old}});
  const reemitted_winner r = reemit_winner(w.spec, k, "2026-12-02T00:00:00Z");
  EXPECT_EQ(r.filled.at("stages"), "2 (the code before the knob)");
  EXPECT_EQ(r.filled.at("publish"), "counter (the code before the knob)");
  EXPECT_EQ(r.filled.at("ring_kb"), "192 (not read by this variant)");  // ring's own knobs: stream never reads them
  EXPECT_EQ(r.filled.at("ahead"), "2 (not read by this variant)");
}

TEST(stored_winners, reemit_refuses_what_would_change_the_code_path) {
  scratch_workload w("gemma-attn-softmax");
  const family& f = *find_family("row_softmax_cuda", device_kind::cuda);
  knob_values v = f.default_variant(w.spec);
  v["warp_shuffle"] = "1";  // a knob the family no longer has
  stored_kernel k = w.write("sm90-nvidia-h200", "int x;\n", {{"family", "row_softmax_cuda"}, {"knobs", v}});
  try {
    reemit_winner(w.spec, k, "now");
    ADD_FAILURE() << "re-emitted a winner whose knob is gone";
  } catch (const user_error& e) {
    EXPECT_THAT(e.message(), HasSubstr("sets knob warp_shuffle, which row_softmax_cuda no longer has"));
  }
  v = f.default_variant(w.spec);
  v.erase("threads");  // read by every variant, and no value gives "the code before it"
  k = w.write("sm90-nvidia-h200", "int x;\n", {{"family", "row_softmax_cuda"}, {"knobs", v}});
  try {
    reemit_winner(w.spec, k, "now");
    ADD_FAILURE() << "re-emitted a winner that lacks a knob its variant reads";
  } catch (const user_error& e) {
    EXPECT_THAT(e.message(), HasSubstr("lacks knob threads, which this variant of row_softmax_cuda reads"));
  }
}

}  // namespace
}  // namespace kf
