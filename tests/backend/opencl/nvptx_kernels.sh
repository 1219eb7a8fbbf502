#!/usr/bin/env bash
# The OpenCL kernels that only NVIDIA's compiler builds (inline PTX: matmul_mma.cl, matmul_wgmma.cl,
# attention_mma.cl, attention_decode_mma.cl) compiled with clang's OpenCL front end for NVPTX, as common.cl plus the op's file like
# backend_opencl/program.c, under -Wall -Werror: PoCL and rusticl cannot build them, so without this CI would
# never see them. The build options are the backends' tiles (backend_opencl/attention.c's tables, matmul's
# tuned configs) in each dtype, with and without cp.async (each with one of the two address modes), and matmul_mma's
# 8-bit float programs. Compiles to PTX only: the inline PTX itself is checked by NVIDIA's compiler on the GPU (the
# mma probe, the conformance suite).
# Usage: nvptx_kernels.sh CLANG KERNEL_DIR
# Exits 77 (ctest's skip) with the reason where clang or its NVPTX target is missing.
set -euo pipefail
clang=${1:-} dir=$2
skip() { echo "[SKIP] opencl_nvptx::kernels: $*"; exit 77; }
[ -n "$clang" ] && [ -x "$clang" ] || skip "no clang found (.ci/install-deps.sh installs clang-15)"
"$clang" --print-targets 2>/dev/null | grep -q nvptx64 || skip "$clang has no NVPTX target"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in matmul_mma matmul_wgmma attention_mma attention_decode_mma; do cat "$dir/common.cl" "$dir/$f.cl" > "$work/$f.cl"; done
n=0 failed=0
build() { # file options...
  local f=$1; shift
  n=$((n + 1))
  # `asm` is a GNU keyword clang's OpenCL mode leaves out; NVIDIA's OpenCL compiler takes it
  # -I: the files a kernel includes, which backend_opencl/program.c expands from the embedded ones
  if ! "$clang" -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -Xclang -finclude-default-header -Dasm=__asm__ \
      -I "$dir" -Wall -Werror -O0 -S -o /dev/null "$@" "$work/$f.cl" 2> "$work/log"; then
    echo "FAIL $f.cl $*"; head -20 "$work/log"; failed=$((failed + 1))
  fi
}
for dt in 1 2; do
  for cp in 0 1; do
    for am in $(( cp ? 1 : 0 )); do
      common="-DX_DT=$dt -DADDR_MODE=$am -DCP_ASYNC=$cp"
      # attention_mma: D 64's tiles, D 128's, decode's (block_m block_n warps stages)
      for t in "64 128 64 4 2" "64 128 64 4 1" "64 64 64 4 2" "64 64 32 4 1" "64 64 16 4 1" "128 64 64 4 1" \
               "128 64 32 4 1" "128 64 16 4 1" "64 16 64 1 1" "128 16 32 1 1" "128 16 16 1 1"; do
        set -- $t
        build attention_mma $common -DHEAD_DIM=$1 -DBLOCK_M=$2 -DBLOCK_N=$3 -DWARPS=$4 -DSTAGES=$5
      done
      # attention_decode_mma: block_n 16 to 64, stages 2 to 4
      for d in 64 128; do
        for t in "16 2" "16 4" "32 3" "64 2"; do
          set -- $t
          build attention_decode_mma $common -DHEAD_DIM=$d -DBLOCK_N=$1 -DSTAGES=$2
        done
      done
      # matmul_mma: tiles (block_m block_n block_k warps_m warps_n stages), both layouts of B, C in f32 and the
      # input type, rows aligned or not
      for t in "128 128 32 2 2 3" "128 256 32 2 4 4" "64 64 32 2 2 2" "128 128 64 2 2 4" "16 128 64 1 4 4"; do
        set -- $t
        pipe=$(( cp && $6 >= 3 ? 1 : 0 ))
        for tb in 0 1; do
          for z in 0 $dt; do
            build matmul_mma $common -DY_DT=$dt -DZ_DT=$z -DBLOCK_M=$1 -DBLOCK_N=$2 -DBLOCK_K=$3 -DGROUP_M=8 \
              -DWARPS_M=$4 -DWARPS_N=$5 -DSTAGES=$6 -DMMA_PIPE=$pipe -DTRANS_A=0 -DTRANS_B=$tb -DVEC_A=1 -DVEC_B=$tb
          done
        done
      done
    done
  done
done
# matmul_mma with 8-bit float operands (e4m3, e5m2 in every mix), widened to f16 through registers (CP_ASYNC 0, two
# stages): both address modes, every layout, C in f32, f16 and bf16, rows aligned or not, the tiles above
for am in 0 1; do
  for xy in "4 4" "5 4" "4 5" "5 5"; do
    set -- $xy
    x=$1 y=$2
    for ta in 0 1; do
      for tb in 0 1; do
        for z in 0 1 2; do
          build matmul_mma -DX_DT=$x -DY_DT=$y -DZ_DT=$z -DADDR_MODE=$am -DCP_ASYNC=0 -DMMA_PIPE=0 -DSTAGES=2 \
            -DBLOCK_M=128 -DBLOCK_N=128 -DBLOCK_K=32 -DGROUP_M=8 -DWARPS_M=2 -DWARPS_N=2 -DTRANS_A=$ta -DTRANS_B=$tb \
            -DVEC_A=$(( (ta + tb + z) % 2 )) -DVEC_B=$(( (ta + z) % 2 ))
        done
      done
    done
  done
  for t in "128 256 32 2 4" "64 64 32 2 2" "128 128 64 2 2" "16 128 64 1 4"; do
    set -- $t
    build matmul_mma -DX_DT=4 -DY_DT=4 -DZ_DT=2 -DADDR_MODE=$am -DCP_ASYNC=0 -DMMA_PIPE=0 -DSTAGES=2 -DBLOCK_M=$1 \
      -DBLOCK_N=$2 -DBLOCK_K=$3 -DGROUP_M=8 -DWARPS_M=$4 -DWARPS_N=$5 -DTRANS_A=0 -DTRANS_B=1 -DVEC_A=1 -DVEC_B=1
  done
done
# the mma probe's build (backend_opencl/mma_probe.c)
build matmul_mma -DMMA_PROBE -DADDR_MODE=1 -DCP_ASYNC=1 -DX_DT=1 -DY_DT=1 -DZ_DT=0
# matmul_wgmma (8-bit floats on wgmma): both address modes, the wgmma lines live and as comments (the driver's
# first build), every pair of formats, C in f32, f16 and bf16, with TMA and with cp.async loads, the tiles its
# check takes; and its probe
for am in 0 1; do
  for wc in 0 1; do
    for xy in "4 4" "5 4" "4 5" "5 5"; do
      set -- $xy
      for z in 0 1 2; do
        for tma in 0 1; do
          build matmul_wgmma -DX_DT=$1 -DY_DT=$2 -DZ_DT=$z -DADDR_MODE=$am -DCP_ASYNC=1 -DWG_COMMENTED=$wc \
            -DTMA=$tma -DBLOCK_M=128 -DBLOCK_N=112 -DGROUP_M=8 -DSTAGES=3
        done
      done
    done
    for t in "128 128 2" "64 128 3" "64 48 4" "128 16 2" "64 64 6"; do
      set -- $t
      build matmul_wgmma -DX_DT=4 -DY_DT=4 -DZ_DT=2 -DADDR_MODE=$am -DCP_ASYNC=1 -DWG_COMMENTED=$wc -DBLOCK_M=$1 \
        -DBLOCK_N=$2 -DGROUP_M=8 -DSTAGES=$3
    done
    build matmul_wgmma -DWGMMA_PROBE -DADDR_MODE=$am -DCP_ASYNC=1 -DWG_COMMENTED=$wc -DX_DT=4 -DY_DT=4 -DZ_DT=0
  done
done
echo "nvptx_kernels: $((n - failed)) of $n builds clean"
[ "$failed" -eq 0 ]
