#!/usr/bin/env bash
# Installs Debian's Chromium and its WebDriver (`/usr/bin/chromium`, `/usr/bin/chromedriver`), which the
# playground's browser tests (tests/playground/) drive through Selenium. The Python side (`selenium`) is in
# the `dev` extra. Idempotent: with both present this only prints their versions.
set -euo pipefail

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq chromium chromium-driver >/dev/null
    else
        echo "chromium.sh: chromium/chromedriver are missing and apt-get is not available;" \
             "install Chromium and its matching chromedriver" >&2
        exit 1
    fi
fi

py="${VENV:-}/bin/python"
if [ -n "${VENV:-}" ] && [ -x "$py" ] && ! "$py" -c 'import selenium' 2>/dev/null; then
    "$py" -m pip install --quiet "selenium>=4.20"
fi
echo "chromium.sh: $(chromium --version 2>/dev/null | head -1); $(chromedriver --version | head -1)"
