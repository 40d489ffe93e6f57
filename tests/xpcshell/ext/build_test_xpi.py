#!/usr/bin/env python3
# SPDX-License-Identifier: MPL-2.0
"""build_test_xpi.py SHIPPED.xpi OUT.xpi -- the test build of the PiCL
extension: the shipped XPI (extension/build-xpi.py) plus this directory's
test-only files under test/ (the picltest Experiment and selftest.js, a
second background script).  The shipped XPI itself holds no test hook."""
import json
import os
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_FILES = ["picltest_api.js", "picltest_schema.json", "selftest.js"]


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: build_test_xpi.py SHIPPED.xpi OUT.xpi\n")
        return 2
    shipped, out = sys.argv[1], sys.argv[2]
    tmp = out + ".tmp"
    with zipfile.ZipFile(shipped) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name in src.namelist():
            data = src.read(name)
            if name == "manifest.json":
                m = json.loads(data)
                m["experiment_apis"]["picltest"] = {
                    "schema": "test/picltest_schema.json",
                    "parent": {"scopes": ["addon_parent"], "script": "test/picltest_api.js",
                               "paths": [["picltest"]]},
                }
                m["background"]["scripts"].append("test/selftest.js")
                data = json.dumps(m, indent=2).encode()
            z.writestr(name, data)
        for f in TEST_FILES:
            z.write(os.path.join(HERE, f), "test/" + f)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
