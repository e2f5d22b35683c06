#!/usr/bin/env bash
# Installs bubblewrap (`bwrap`), the OS sandbox of the bash builtin (docs/security.md). The sandbox
# tests (tests/faults/test_builtin_faults.py, tests/tools/builtin) require it under CI=true.
# Idempotent: with bwrap present this only checks that it can build a sandbox here.
set -euo pipefail

if ! command -v bwrap >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq bubblewrap >/dev/null
    else
        echo "bubblewrap.sh: bwrap is missing and apt-get is not available; install bubblewrap" >&2
        exit 1
    fi
fi

# The same namespaces the tool asks for; fails loudly when the machine forbids them.
if ! bwrap --unshare-all --unshare-user --die-with-parent --cap-drop ALL --ro-bind /usr /usr \
        --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --proc /proc --dev /dev \
        /bin/sh -c 'exit 0'; then
    echo "bubblewrap.sh: bwrap is installed but cannot build a sandbox on this machine" >&2
    exit 1
fi
echo "bubblewrap.sh: $(bwrap --version) works"
