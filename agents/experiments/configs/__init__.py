"""Example experiment configs (``tradecraft experiment examples`` lists them)."""
