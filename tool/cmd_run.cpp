// kforge run: not implemented yet (see the issue tracker).
#include "args.h"
#include "commands.h"
#include "util/error.h"

namespace kf {

std::string run_help() { return "usage: kforge run [options]\n\n(not implemented yet)\n"; }

int run_run(const std::vector<std::string>&) { throw user_error("kforge run is not implemented yet"); }

}  // namespace kf
