// kforge report: not implemented yet (see the issue tracker).
#include "args.h"
#include "commands.h"
#include "util/error.h"

namespace kf {

std::string report_help() { return "usage: kforge report [options]\n\n(not implemented yet)\n"; }

int report_run(const std::vector<std::string>&) { throw user_error("kforge report is not implemented yet"); }

}  // namespace kf
