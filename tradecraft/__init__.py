"""The ``tradecraft`` command's home: the umbrella CLI that gathers every package's commands.

It sits above ``craft_rules``, ``server`` and ``agents`` (each of which stays importable on its own), so a
command that needs no server never imports the web layer.
"""
