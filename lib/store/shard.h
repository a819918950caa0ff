// Shards of one `kforge run` across several runners (`--shard K/N`): which workloads each shard runs, balanced by
// the time each took in the stored history, and the check that merged shards covered every workload once.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/run_result.h"
#include "spec/spec.h"

namespace kf {

struct shard_id {
  int index = 1;  // 1-based: K of K/N
  int count = 1;  // N
};

// Parses "K/N" (1 <= K <= N); throws user_error naming --shard and the expected form.
shard_id parse_shard(std::string_view text);

// The workloads of every shard. Longest processing time first: workloads sorted by (seconds descending, name),
// each given to the shard with the least time so far (the lowest index on a tie). A workload without a time
// weighs the mean of the known ones (1 s when none is known). Deterministic: every runner that has the same
// names and times computes the same split. Each shard's list keeps the order of `names`.
std::vector<std::vector<std::string>> assign_shards(const std::vector<std::string>& names,
                                                    const std::map<std::string, double>& seconds, int count);

// The seconds of each workload in a recorded run (the history note of the merge-base or parent).
std::map<std::string, double> recorded_seconds(const run_result& history);

// What a shard's run records in its JSON (options.shard): which shard, of how many, which workloads, and the
// whole list it was cut from, so that `report merge` can tell a missing or disagreeing shard.
nlohmann::json shard_record(const shard_id& id, const std::vector<std::vector<std::string>>& plan,
                            const std::vector<std::string>& all_names, const std::string& weights_from);

class git_repo;

// `kforge run --shard`: cuts `specs` down to this shard's workloads, weighted by this GPU key's history note on the
// commit the run compares with (the merge-base of HEAD and `base_ref`, else HEAD's parent), equal weights without
// one. `worker_env` is the worker's env answer (for the GPU key); `repo` may be null. Returns options.shard.
nlohmann::json keep_shard(const shard_id& id, std::vector<workload_spec>& specs, const git_repo* repo,
                          const std::string& base_ref, const nlohmann::json& worker_env);

// For shards about to be merged: empty when each carries options.shard, they agree on N and on the whole list,
// every index 1..N appears once and every workload is in exactly one shard; otherwise a sentence saying what is
// wrong ("shard 2/3 is missing"). Empty as well when no input is a shard (a plain merge).
std::string check_shards(const std::vector<run_result>& shards);

// Puts a merged run's workloads in the order of the list the shards were cut from (the unsharded run's order) and
// replaces options.shard with {"merged": [indices], "count": N}. Does nothing when the inputs were not shards.
void join_shard_records(run_result& merged, const std::vector<run_result>& shards);

}  // namespace kf
