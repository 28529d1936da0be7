"""`python -m threadloom.core.cli`: what the service, the hooks and the MCP configurations run."""

import sys

from . import main

sys.exit(main())
