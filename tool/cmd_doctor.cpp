// kforge doctor: not implemented yet (see the issue tracker).
#include "args.h"
#include "commands.h"
#include "util/error.h"

namespace kf {

std::string doctor_help() { return "usage: kforge doctor [options]\n\n(not implemented yet)\n"; }

int doctor_run(const std::vector<std::string>&) { throw user_error("kforge doctor is not implemented yet"); }

}  // namespace kf
