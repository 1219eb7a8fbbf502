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
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
