"""Security tests: what replicas, recipes, task files and agents may not reach or do (a package, so its
module names may repeat those of other test folders, e.g. ``test_network``)."""
