#!/bin/bash
# usage: bench/probes/ab_prefill.sh name1 name2 ...: probe_prefill.py with each
# carry/alt/NAME/libmlagen.so, rounds alternating (ROUNDS, default "1 2");
# cuDNN alongside in round 1, or every round with CUDNN=--cudnn.
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
for round in ${ROUNDS:-1 2}; do for n in "$@"; do
  NAME=$n MLAGEN_LIBRARY=$PWD/carry/alt/$n/libmlagen.so MLAGEN_CACHE_DIR=/tmp/cache-$n \
    timeout 200 python3 bench/probes/probe_prefill.py ${CUDNN:-$( [ $round = 1 ] && echo --cudnn )} 2>&1 | tail -1
done; done
