// kforge-worker: the process that touches a device (placeholder until the worker lands).
#include <cstdio>
int main() { std::fprintf(stderr, "kforge-worker: not implemented yet\n"); return 2; }
