#!/bin/bash
# usage: sweep.sh "BM BN BK T" ...   (runs all 8 layout/alignment combos per config, 2 at a time)
K=${KSRC:-/work/wt-cudaf32/kernels/cuda/matmul_simt.cu}
fail=0
for cfg in "$@"; do set -- $cfg
  for ta in 0 1; do for tb in 0 1; do for al in 0 1; do
    exe=/tmp/cf32/emu_$1_$2_$3_$4_$ta$tb$al
    g++ -std=c++20 -O1 -pthread -DKSRC="\"$K\"" -DDT_IN=0 -DDT_OUT=0 -DBM=$1 -DBN=$2 -DBK=$3 -DTHREADS=$4 -DTRANS_A=$ta -DTRANS_B=$tb -DALIGNED=$al /tmp/cf32/emu.cpp -o $exe 2>&1 | grep -E "error" | head -3
    $exe | tail -1 || fail=1
    rm -f $exe
  done; done; done
done
exit $fail
