"""`python -m docker_cluster ...` is `python -m docker_cluster.cluster ...` (see docker_cluster/cluster.py)."""

import sys

from docker_cluster.cluster import main

sys.exit(main())
