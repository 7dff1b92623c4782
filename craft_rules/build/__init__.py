"""Generators that build the shipped rule sets from registry packages and the project's own tables.

``python -m craft_rules.build.minecraft`` rebuilds ``craft_rules/rule_sets/minecraft/``.
"""
