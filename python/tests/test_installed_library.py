"""The package over an installed library: `cmake --install` of the build under test into a temporary prefix,
then, with TRIREME_LIBRARY unset and from a folder outside the checkout, `import trireme; trireme.Context("cpu")`
finds the library through pkg-config (PKG_CONFIG_PATH naming the prefix's lib/pkgconfig). The package runs from
a copy of its modules without the library a wheel puts inside it (which would be found first)."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import trireme


def build_dir():
    """The CMake build the tests run against (TRIREME_BUILD_DIR, as `make test-python` sets it, else the folder
    of TRIREME_LIBRARY), or a skip."""
    where = os.environ.get("TRIREME_BUILD_DIR") or (
        str(pathlib.Path(os.environ["TRIREME_LIBRARY"]).resolve().parent) if os.environ.get("TRIREME_LIBRARY") else "")
    if not where:
        pytest.skip("neither TRIREME_BUILD_DIR nor TRIREME_LIBRARY is set: no build to install")
    build = pathlib.Path(where).resolve()
    if not (build / "cmake_install.cmake").is_file():
        pytest.skip(f"{build} is not a CMake build tree")
    if not shutil.which("cmake") or not shutil.which("pkg-config"):
        pytest.skip("cmake and pkg-config are needed")
    return build


def run_outside(tmp_path, code, **env):
    """code in a fresh interpreter, in tmp_path, importing a copy of the package's modules (no library inside)."""
    pkg = tmp_path / "pkg"
    if not pkg.exists():
        shutil.copytree(pathlib.Path(trireme.__file__).resolve().parent, pkg / "trireme",
                        ignore=shutil.ignore_patterns("*.so", "bin", "__pycache__"))
    e = {k: v for k, v in os.environ.items() if k not in ("TRIREME_LIBRARY", "LD_LIBRARY_PATH", "PKG_CONFIG_PATH")}
    # Directories that hold the library's own dependencies stay (a machine without libcjson1 installed, as the
    # GPU runs carry it beside the build); a directory holding libtrireme itself would decide the test.
    keep = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)
            if d and not list(pathlib.Path(d).glob("libtrireme.so*"))]
    if keep:
        e["LD_LIBRARY_PATH"] = os.pathsep.join(keep)
    e.update(env)
    e["PYTHONPATH"] = str(pkg)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, cwd=tmp_path,
                          timeout=120)


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    build = build_dir()
    p = tmp_path_factory.mktemp("prefix")
    proc = subprocess.run(["cmake", "--install", str(build), "--prefix", str(p)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pcs = list(p.glob("lib*/**/pkgconfig/trireme.pc"))
    assert pcs, f"no trireme.pc under {p}"
    return p, pcs[0].parent


def test_installed_library_is_found_through_pkg_config(prefix, tmp_path):
    p, pcdir = prefix
    proc = run_outside(tmp_path, "import trireme\nc = trireme.Context('cpu')\nprint(trireme.library_path())",
                       PKG_CONFIG_PATH=str(pcdir))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith(str(p)), proc.stdout


def test_the_error_lists_pkg_config_among_the_places_tried(tmp_path):
    if not shutil.which("pkg-config"):
        pytest.skip("pkg-config is not installed")
    code = ("import trireme\ntry:\n    trireme.Context('cpu')\nexcept OSError as e:\n    print(e)\n"
            "else:\n    print('LOADED', trireme.library_path())")
    proc = run_outside(tmp_path, code, PKG_CONFIG_PATH=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    if proc.stdout.startswith("LOADED"):
        pytest.skip(f"a libtrireme is installed system-wide: {proc.stdout.strip()}")
    assert "pkg-config --variable=libdir trireme" in proc.stdout, proc.stdout
    assert "find_library" in proc.stdout, proc.stdout
    assert "build" + os.sep + "libtrireme.so" not in proc.stdout  # no build tree guessed inside site-packages

