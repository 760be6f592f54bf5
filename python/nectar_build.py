"""The PEP 517 build backend of the nectar Python package (pyproject.toml).

A wheel is the package's Python files plus the shared library, built by the
repository's Makefile (`make shared`) in the checkout this folder belongs to
(or $NECTAR_SOURCE_DIR), with its objects in the checkout's build/ folder (or
$NECTAR_BUILD_DIR). A source distribution (build_sdist: `python -m build
--sdist python`, or this module's hook) carries what that build needs, the
Makefile, include/ and src/, in csrc/: `pip install nectar-X.tar.gz` builds
libnectar from them (a C compiler, make, pkg-config and the -dev packages of
scripts/install-deps.sh; nothing from PyPI). Written with the standard
library only, so that neither needs anything from PyPI.
"""

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "nectar"


# what an sdist carries of the repository: enough for `make shared`
SDIST_C = ("Makefile", "include", "src")


def _root():
    bundled = os.path.join(HERE, "csrc")  # an unpacked sdist
    if os.path.isfile(os.path.join(bundled, "include", "nectar.h")):
        bundled_root = bundled
    else:
        bundled_root = os.path.dirname(HERE)
    root = os.environ.get("NECTAR_SOURCE_DIR") or bundled_root
    if not os.path.isfile(os.path.join(root, "include", "nectar.h")):
        raise RuntimeError(
            "nectar: %s is not a nectar checkout (no include/nectar.h): the package builds "
            "libnectar from the repository it lives in; set NECTAR_SOURCE_DIR to one" % root)
    return root


def _version():
    with open(os.path.join(_root(), "include", "nectar.h"), encoding="utf-8") as f:
        m = re.search(r'#define NECTAR_VERSION "([^"]+)"', f.read())
    if not m:
        raise RuntimeError("nectar: include/nectar.h defines no NECTAR_VERSION")
    return m.group(1)


def _shared_library():
    """Runs `make shared` and returns the path of the library it made."""
    root = _root()
    build = os.environ.get("NECTAR_BUILD_DIR") or "build"
    env = dict(os.environ)
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):  # not a sub-make of a caller's make
        env.pop(k, None)
    cmd = ["make", "-C", root, "--no-print-directory", "-j%d" % (os.cpu_count() or 1),
           "BUILD=" + build, "shared"]
    print("nectar: " + " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, env=env, stdout=sys.stderr)
    major = _version().split(".")[0]
    name = ("libnectar.%s.dylib" % major) if sys.platform == "darwin" else ("libnectar.so." + major)
    path = os.path.join(build if os.path.isabs(build) else os.path.join(root, build), name)
    if not os.path.isfile(path):
        raise RuntimeError("nectar: make shared did not produce " + path)
    return path, name


def _metadata(version):
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\n"
            "Summary: Python bindings of nectar (ctypes over libnectar)\n"
            "Requires-Python: >=3.8\nProvides-Extra: numpy\n"
            "Requires-Dist: numpy; extra == \"numpy\"\n" % (NAME, version))


def _tag():
    # the wheel holds a native library: tied to this platform, not to a Python ABI
    plat = re.sub(r"[-.]", "_", sysconfig.get_platform())
    return "py3-none-" + plat


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    version = _version()
    dist_info = "%s-%s.dist-info" % (NAME, version)
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "w") as f:
        f.write(_metadata(version))
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    lib_path, lib_name = _shared_library()
    files = []  # (name in the wheel, bytes)
    pkg = os.path.join(HERE, NAME)
    for fn in sorted(os.listdir(pkg)):
        if fn.endswith(".py") or fn == "py.typed":
            with open(os.path.join(pkg, fn), "rb") as f:
                files.append(("%s/%s" % (NAME, fn), f.read()))
    with open(lib_path, "rb") as f:
        files.append(("%s/%s" % (NAME, lib_name), f.read()))
    dist_info = "%s-%s.dist-info" % (NAME, version)
    files.append((dist_info + "/METADATA", _metadata(version).encode()))
    wheel = "Wheel-Version: 1.0\nGenerator: nectar_build\nRoot-Is-Purelib: false\nTag: %s\n"
    files.append((dist_info + "/WHEEL", (wheel % _tag()).encode()))
    record = [_record_line(n, d) for n, d in files] + [dist_info + "/RECORD,,"]
    files.append((dist_info + "/RECORD", ("\n".join(record) + "\n").encode()))
    wheel_name = "%s-%s-%s.whl" % (NAME, version, _tag())
    tmp = os.path.join(wheel_directory, wheel_name + ".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            info = zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if n.endswith(lib_name) else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, d)
    shutil.move(tmp, os.path.join(wheel_directory, wheel_name))
    return wheel_name


def get_requires_for_build_sdist(config_settings=None):
    return []


def _sdist_files():
    """(name in the archive, path here) of everything the sdist holds."""
    out = [(n, os.path.join(HERE, n)) for n in ("pyproject.toml", "nectar_build.py")]
    pkg = os.path.join(HERE, NAME)
    out += [("%s/%s" % (NAME, fn), os.path.join(pkg, fn)) for fn in sorted(os.listdir(pkg))
            if fn.endswith(".py") or fn == "py.typed"]
    root = _root()
    for top in SDIST_C:
        path = os.path.join(root, top)
        if os.path.isfile(path):
            out.append(("csrc/" + top, path))
            continue
        for d, dirs, files in os.walk(path):
            dirs.sort()
            for fn in sorted(files):
                full = os.path.join(d, fn)
                out.append(("csrc/" + os.path.relpath(full, root).replace(os.sep, "/"), full))
    return out


def build_sdist(sdist_directory, config_settings=None):
    """nectar-VERSION.tar.gz (PEP 625 name, PKG-INFO first): the package,
    this backend and the C sources; written beside its final name, then
    renamed, so a failure leaves no partial archive."""
    import io
    import tarfile
    version = _version()
    base = "%s-%s" % (NAME, version)
    name = base + ".tar.gz"
    tmp = os.path.join(sdist_directory, name + ".part")

    def add(tar, arcname, data, mode=0o644):
        info = tarfile.TarInfo("%s/%s" % (base, arcname))
        info.size = len(data)
        info.mode = mode
        info.mtime = 0
        tar.addfile(info, io.BytesIO(data))

    try:
        with tarfile.open(tmp, "w:gz", format=tarfile.PAX_FORMAT) as tar:
            add(tar, "PKG-INFO", _metadata(version).encode())
            for arcname, path in _sdist_files():
                with open(path, "rb") as f:
                    add(tar, arcname, f.read())
        os.replace(tmp, os.path.join(sdist_directory, name))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return name
