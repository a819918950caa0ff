// kforge search: not implemented yet (see the issue tracker).
#include "args.h"
#include "commands.h"
#include "util/error.h"

namespace kf {

std::string search_help() { return "usage: kforge search [options]\n\n(not implemented yet)\n"; }

int search_run(const std::vector<std::string>&) { throw user_error("kforge search is not implemented yet"); }

}  // namespace kf
