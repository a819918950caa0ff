// Ctrl-C for long searches: the first SIGINT asks the search to stop after the evaluations in flight (the tree
// is kept and --resume continues it); a second one takes the default action.
#pragma once

namespace kf {

void install_search_interrupt();
bool search_interrupted();

}  // namespace kf
