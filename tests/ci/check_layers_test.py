#!/usr/bin/env python3
"""ci/check-layers fails on a planted upward include and on a cycle between peers, naming file:line and the
layers, and passes on the same copy without them. Runs on a temporary copy of lib/, baselines/ and tool/."""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "ci", "check-layers")


def run(root, script=SCRIPT):
    p = subprocess.run([sys.executable, script, "--root", root], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def expect(cond, what, out):
    if not cond:
        print(f"FAIL: {what}\n{out}")
        sys.exit(1)


def plant(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for top in ("lib", "baselines", "tool"):
            shutil.copytree(os.path.join(ROOT, top), os.path.join(tmp, top))
        rc, out = run(tmp)
        expect(rc == 0, "the copied tree passes", out)

        # util is the lowest layer: including spec from it goes upward.
        plant(tmp, "lib/util/planted.h", '#pragma once\n\n#include "spec/spec.h"\n')
        rc, out = run(tmp)
        expect(rc == 1, "an upward include fails", out)
        expect("lib/util/planted.h:3: util includes spec (lib/spec/spec.h), a higher layer" in out,
               "the failure names file:line and both layers", out)
        os.remove(os.path.join(tmp, "lib/util/planted.h"))

        # lib/ includes baselines/ through the include path, without the folder's name.
        plant(tmp, "lib/measure/planted.cpp", '#include "register.h"\n')
        rc, out = run(tmp)
        expect(rc == 1 and "lib/measure/planted.cpp:1: measure includes baselines" in out,
               "an include resolved through baselines/ is ordered too", out)
        os.remove(os.path.join(tmp, "lib/measure/planted.cpp"))

        # verify and measure are peers: one may include the other, both ways closes a cycle.
        plant(tmp, "lib/verify/planted_a.h", '#pragma once\n#include "measure/stats.h"\n')
        rc, out = run(tmp)
        expect(rc == 0, "a peer include without a cycle passes", out)
        plant(tmp, "lib/measure/planted_b.h", '#pragma once\n#include "verify/verdict.h"\n')
        rc, out = run(tmp)
        expect(rc == 1 and "closing a cycle between peers" in out and "lib/measure/planted_b.h:2" in out
               and "lib/verify/planted_a.h:2" in out, "a cycle between peers fails on each of its includes", out)
        os.remove(os.path.join(tmp, "lib/verify/planted_a.h"))
        os.remove(os.path.join(tmp, "lib/measure/planted_b.h"))

        # A folder in no tier is an error, not a silent pass.
        plant(tmp, "lib/unordered/planted.h", '#pragma once\n#include "util/error.h"\n')
        rc, out = run(tmp)
        expect(rc == 1 and "unordered is in no tier" in out, "an unordered folder fails", out)
        os.remove(os.path.join(tmp, "lib/unordered/planted.h"))

        # An allowlisted include passes while it is there; once it is gone the entry fails, so the allowlist only
        # shrinks. The tree has no entry left: a copy of the script gets one.
        with open(SCRIPT) as f:
            text = f.read()
        entry = '    ("lib/measure/planted.cpp", "lib/gate/gate.h"): "planted",\n'
        expect("ALLOWED = {\n" in text, "the script has its ALLOWED list", text[:200])
        script = os.path.join(tmp, "check-layers-allowing")
        with open(script, "w") as f:
            f.write(text.replace("ALLOWED = {\n", "ALLOWED = {\n" + entry, 1))
        plant(tmp, "lib/measure/planted.cpp", '#include "gate/gate.h"\n')
        rc, out = run(tmp, script)
        expect(rc == 0, "an allowlisted upward include passes", out)
        plant(tmp, "lib/measure/planted.cpp", "\n")
        rc, out = run(tmp, script)
        expect(rc == 1 and "allowlisted include of lib/gate/gate.h is gone" in out, "a stale allowlist entry fails", out)
        os.remove(os.path.join(tmp, "lib/measure/planted.cpp"))

        rc, out = run(tmp)
        expect(rc == 0, "the copy passes again once the plants are gone", out)
    print("ok")


if __name__ == "__main__":
    main()
