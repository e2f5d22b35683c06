"""Builtin workspace tools: bash, read, write, edit, grep, glob.

The registry (chainreact.tools.registry) imports each module on first use, so this package imports
nothing eagerly. Every tool is confined to its `workDir` (see workspace.py).
"""
