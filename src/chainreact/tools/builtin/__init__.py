"""Builtin tools: the workspace tools bash, read, write, edit, grep, glob; and ask_user.

The registry (chainreact.tools.registry) imports each module on first use, so this package imports
nothing eagerly. Every tool is confined to its `workDir` (see workspace.py).
"""
