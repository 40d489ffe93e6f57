#!/usr/bin/env python3
# SPDX-License-Identifier: MPL-2.0
"""build-xpi.py OUT.xpi -- packs the PiCL extension: this directory's
manifest, schema, parent script, background, popup and icon, plus the binding
modules from ../components (PiCLService.sys.mjs, PiCLStores.sys.mjs,
PiCLWorker.js, and the per-store modules stores/*.sys.mjs) under modules/,
in the same layout, so their relative imports resolve.  libpicl.so is not
packed (dlopen needs a real file): set the pref services.picl.libraryPath,
or install it where the dynamic linker finds it (make install)."""
import glob
import os
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = ["manifest.json", "schema.json", "api.js", "background.js",
         "popup.html", "popup.js", "popup.css", "icons/picl.svg"]
COMPONENTS = os.path.join(HERE, "..", "components")
MODULES = ["PiCLService.sys.mjs", "PiCLStatus.js", "PiCLStatus.sys.mjs", "PiCLStores.sys.mjs", "PiCLWorker.js"] + sorted(
    os.path.relpath(p, COMPONENTS) for p in glob.glob(os.path.join(COMPONENTS, "stores", "*.sys.mjs")))


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: build-xpi.py OUT.xpi\n")
        return 2
    out = sys.argv[1]
    tmp = out + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for f in FILES:
            z.write(os.path.join(HERE, f), f)
        for f in MODULES:
            z.write(os.path.join(COMPONENTS, f), "modules/" + f)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
