// kforge-worker: the process that touches a device. Started by kforge (one per device), it answers requests on
// stdin/stdout (docs/worker-protocol.md); a candidate that crashes or hangs takes only this process down.
#include "exec/worker_table.h"

int main(int argc, char** argv) { return kf::run_worker(argc, argv, kf::worker_commands(), kf::worker_setup); }
