#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Installs what txl needs to build and test on Debian 12 (run as root or
# with sudo available).
set -e
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
  build-essential meson ninja-build pkg-config \
  libglib2.0-dev libjson-glib-dev libopenblas-dev libzstd-dev \
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev \
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good \
  python3 python3-numpy python3-torch
# txld (docs/txld.md): its HTTP server is libsoup 3; tests/integration/test_txld.py drives
# the live page in headless Chromium (skipped without it)
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
  libsoup-3.0-dev
# tests/integration/test_syslog_clients.py: the real syslog client (logger,
# in bsdutils) and server (rsyslogd) on loopback; test_alerts.py: Alertmanager
# and Prometheus
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
  bsdutils rsyslog prometheus-alertmanager prometheus
# txljournalsrc reads the journal with libsystemd; test_journal.py writes
# journal files with systemd-journal-remote
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
  libsystemd-dev systemd-journal-remote
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
  chromium || echo "install-deps: chromium not installed; the live-page test will be skipped"
# tests/integration/test_otlp_sdk.py: the OpenTelemetry JS SDK's OTLP log
# exporters (installed by npm under the build folder; skipped without them)
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
  nodejs npm || echo "install-deps: nodejs/npm not installed; the OTLP SDK test will be skipped"
