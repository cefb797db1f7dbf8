#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Print a markdown table of the committed corpus: per source, lines and bytes
# of the text and bytes of its .zst file.   tools/corpus/stats.sh [DIR]
set -eu
DIR=${1:-$(cd "$(dirname "$0")/../.." && pwd)/data/corpus}
echo "| source | lines | bytes | zstd bytes |"
echo "| --- | ---: | ---: | ---: |"
tl=0; tb=0; tz=0
for f in "$DIR"/*.log.zst; do
    l=$(zstd -dc "$f" | wc -l); b=$(zstd -dc "$f" | wc -c); z=$(wc -c < "$f")
    echo "| $(basename "$f" .log.zst) | $l | $b | $z |"
    tl=$((tl + l)); tb=$((tb + b)); tz=$((tz + z))
done
echo "| **total** | $tl | $tb | $tz |"
