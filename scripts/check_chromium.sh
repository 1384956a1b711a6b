#!/usr/bin/env bash
# Makes sure a headless Chromium and its WebDriver are there for the dashboard test: installs
# Debian's chromium + chromium-driver with apt-get when missing (as root, as on CI), else fails
# with one clear line saying what to install.
set -u
found() { command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; }
if found; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium and chromium-driver (apt-get) for the dashboard test ..." >&2
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1
  fi
fi
if ! found; then
  echo "the dashboard test needs Chromium and its WebDriver (chromium, chromedriver on PATH) and could not install them: run 'apt-get install chromium chromium-driver' as root and retry." >&2
  exit 1
fi
