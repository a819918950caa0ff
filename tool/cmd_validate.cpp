// kforge validate: not implemented yet (see the issue tracker).
#include "args.h"
#include "commands.h"
#include "util/error.h"

namespace kf {

std::string validate_help() { return "usage: kforge validate [options]\n\n(not implemented yet)\n"; }

int validate_run(const std::vector<std::string>&) { throw user_error("kforge validate is not implemented yet"); }

}  // namespace kf
