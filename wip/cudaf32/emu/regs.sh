#!/bin/bash
# usage: regs.sh SRC "defines" [arch]
src=$1; defs=$2; arch=${3:-sm_90a}
cat /work/wt-cudaf32/kernels/cuda/common.cuh $src > /tmp/cf32/k.cu
nvcc -cubin -arch=$arch -std=c++17 -Xptxas -v $defs -o /tmp/cf32/k.cubin /tmp/cf32/k.cu 2>&1 | grep -E "registers|spill|error|warning" 
