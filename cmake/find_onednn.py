"""Print the directory holding dnnl-config.cmake from an installed oneDNN *devel* wheel (empty if none).

pip installs the wheel's data files into the environment prefix (or a temporary overlay prefix in an isolated
build), so the location is read from the distribution's file list instead of guessed from sys.prefix.
"""
import importlib.metadata as md
import os

for dist in md.distributions():
    name = (dist.metadata["Name"] or "").lower().replace("_", "-")
    if not name.startswith("onednn-devel"):
        continue
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith("cmake/dnnl/dnnl-config.cmake"):
            path = os.path.dirname(os.path.abspath(dist.locate_file(f)))
            if os.path.isfile(os.path.join(path, "dnnl-config.cmake")):
                print(path, end="")
                raise SystemExit(0)
