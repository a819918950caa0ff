// kforge retune: not implemented yet (see the issue tracker).
#include "args.h"
#include "commands.h"
#include "util/error.h"

namespace kf {

std::string retune_help() { return "usage: kforge retune [options]\n\n(not implemented yet)\n"; }

int retune_run(const std::vector<std::string>&) { throw user_error("kforge retune is not implemented yet"); }

}  // namespace kf
