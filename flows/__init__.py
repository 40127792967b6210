"""Prefect flows: the entrypoints that prefect.yaml names."""
