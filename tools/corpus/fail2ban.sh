#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Fetch the test log files shipped in Debian's fail2ban package (GPL-2+) and
# write them, without their annotation/comment lines, into DIR/fail2ban.log.
# Used at model-build time; the fail2ban text is never committed to this repo.
#
#   tools/corpus/fail2ban.sh DIR
set -eu
DIR=${1:?usage: $0 DIR}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
apt-get download fail2ban >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 && apt-get download fail2ban >/dev/null; }
deb=$(ls fail2ban_*.deb)
dpkg -x "$deb" x
logs=x/usr/lib/python3/dist-packages/fail2ban/tests/files/logs
[ -d "$logs" ] || { echo "no $logs in $deb" >&2; exit 1; }
# Lines starting with '#' are fail2ban's "# failJSON:" test annotations and
# other comments, not log text. Blank lines carry nothing either.
find "$logs" -type f | LC_ALL=C sort | while read -r f; do
    grep -av '^[[:space:]]*#' "$f" | grep -av '^[[:space:]]*$' || true
done > "$DIR/fail2ban.log"
# keep the package's copyright file next to the text it covers
cp x/usr/share/doc/fail2ban/copyright "$DIR/fail2ban.copyright" 2>/dev/null || true
echo "fail2ban $(echo "$deb" | sed 's/^fail2ban_//; s/_all.deb$//'):" \
     "$(find "$logs" -type f | wc -l) files," \
     "$(wc -l < "$DIR/fail2ban.log") lines, $(wc -c < "$DIR/fail2ban.log") bytes" >&2
