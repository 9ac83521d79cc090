"""Runnable examples: ``python -m mqbalance.examples.<name>``."""
