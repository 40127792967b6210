"""osgym: desktop-OS replicas in containers, agent episodes on them, Parquet datasets from those episodes.

The core library knows nothing about Prefect; ``flows/`` and ``tasks/`` wrap it.
"""

__version__ = "0.1.0"
