#!/usr/bin/env bash
# Installs tmux: tests/chat/test_chat_tmux.py drives `chainreact chat` on a real terminal with it
# (send-keys / capture-pane). Idempotent: with tmux present this only prints its version.
set -euo pipefail

if ! command -v tmux >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq tmux >/dev/null
    else
        echo "tmux.sh: tmux is missing and apt-get is not available; install tmux" >&2
        exit 1
    fi
fi
echo "tmux.sh: $(tmux -V)"
