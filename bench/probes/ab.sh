#!/bin/bash
# usage: bench/probes/ab.sh SCRIPT name1 name2 ...: SCRIPT with each carry/alt lib, twice alternately
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
s=$1; shift
for round in 1 2; do for n in "$@"; do
  NAME=$n MLAGEN_LIBRARY=$PWD/carry/alt/$n/libmlagen.so MLAGEN_CACHE_DIR=/tmp/cache-$n timeout ${AB_TIMEOUT:-120} python3 $s 2>&1 | tail -2
done; done
