// kforge check: not implemented yet (see the issue tracker).
#include "args.h"
#include "commands.h"
#include "util/error.h"

namespace kf {

std::string check_help() { return "usage: kforge check [options]\n\n(not implemented yet)\n"; }

int check_run(const std::vector<std::string>&) { throw user_error("kforge check is not implemented yet"); }

}  // namespace kf
