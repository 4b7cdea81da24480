#!/bin/bash
export LD_LIBRARY_PATH=$PWD/.devlibs:$LD_LIBRARY_PATH OPENBLAS_CORETYPE=SKYLAKEX
B=build-gpu/bin
Q="$B/tessera_qr_bench --sizes 32768 --precision d --repeat 3 --threads 16 --max-cpu-n 0 --max-tile-gpu-n 0"
r() { echo "$1: $(grep '^ *32768' $OUT/$1.txt | awk -F'|' '{print $5, $8, $9}')"; }
$Q > $OUT/b8c4.txt 2>&1; r b8c4
$Q --bulk-columns 2 --chunked-steps 8 > $OUT/b2c8.txt 2>&1; r b2c8
$Q --bulk-columns 4 --chunked-steps 8 > $OUT/b4c8.txt 2>&1; r b4c8
$Q --bulk-columns 2 --chunked-steps 16 > $OUT/b2c16.txt 2>&1; r b2c16
$Q --bulk-columns 4 --chunked-steps 4 > $OUT/b4c4.txt 2>&1; r b4c4
$B/tessera_qr --device gpu --algorithm blocked --n 32768 --m 32768 --threads 16 --repeat 1 --bulk-columns 2 --chunked-steps 8 --trace $OUT/b2c8.json > /dev/null 2>&1
