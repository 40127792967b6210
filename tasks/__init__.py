"""Prefect tasks: thin wrappers over plain osgym functions."""
