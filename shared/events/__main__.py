"""`python -m shared.events listen <exchange> [<pattern>...]` (see `listen`)."""

import sys

from shared.events.listen import arguments, listen

if __name__ == "__main__":
    args = arguments()
    sys.exit(listen(args.exchange, args.patterns, args.count))
