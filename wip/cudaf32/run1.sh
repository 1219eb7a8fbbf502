#!/bin/bash
# cudaf32 run 1: lead build (build-gpu) vs build-h-cudaf32: bench matmul_f32 + tile sweep, then conformance
S=$SECONDS
export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/nvidia_icd.json TRIREME_CACHE_DIR=/tmp/trireme-cache
export TRIREME_CUBLAS_DIR=$(dirname $(ls /opt/torch/.venv/lib/python3*/site-packages/nvidia/cu13/lib/libcublas.so* | head -1))
N=build-h-cudaf32; L=build-gpu
export LD_LIBRARY_PATH=$PWD/$N/lib:$LD_LIBRARY_PATH
date -u > $OUT/log.txt
$N/cli/trireme devices >> $OUT/log.txt 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv >> $OUT/log.txt 2>&1
bm() { local t=$1 b=$2; shift 2; echo "== $b $* $(date -u +%T) t=$((SECONDS-S))" >> $OUT/bench.txt; timeout $t $b/cli/trireme bench matmul_f32 --device cuda:0 "$@" >> $OUT/bench.txt 2>&1; }
bm 40 $L --sizes 2048,4096,8192 --json $OUT/old.json
bm 40 $N --sizes 2048,4096,8192 --json $OUT/new.json
bm 30 $N --sizes 4096,8192 --config matmul:block_m=128,block_n=256,block_k=8,threads=256
bm 30 $N --sizes 4096,8192 --config matmul:block_m=128,block_n=128,block_k=8,threads=128
bm 30 $N --sizes 4096 --config matmul:block_m=128,block_n=128,block_k=8,threads=256
[ $((SECONDS-S)) -lt 110 ] && bm 20 $N --sizes 4096 --config matmul:group_m=4
[ $((SECONDS-S)) -lt 115 ] && bm 20 $N --sizes 4096 --config matmul:group_m=16
echo "bench done $(date -u +%T) t=$((SECONDS-S))" >> $OUT/log.txt
R=$((232 - (SECONDS-S)))
TRIREME_CACHE_DIR=/tmp/tc1 timeout $R $N/cli/trireme conformance --device cuda:0 --ops matmul > $OUT/conf-default.txt 2>&1 &
TRIREME_CACHE_DIR=/tmp/tc2 timeout $R $N/cli/trireme conformance --device cuda:0 --ops matmul --config matmul:variant=simt,block_m=256,block_n=128,block_k=8,threads=256 > $OUT/conf-simt256x128t256.txt 2>&1 &
TRIREME_CACHE_DIR=/tmp/tc3 timeout $R $N/cli/trireme conformance --device cuda:0 --ops matmul --quick --config matmul:variant=simt,block_m=128,block_n=128,block_k=8,threads=128 > $OUT/conf-simt128x128t128-quick.txt 2>&1 &
wait; echo "end $(date -u +%T) t=$((SECONDS-S))" >> $OUT/log.txt
