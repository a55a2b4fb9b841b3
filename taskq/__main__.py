import sys

from taskq.cli import main

sys.exit(main())
