"""`python -m trireme ARGS` (and the `trireme` script a wheel installs): the trireme command, with ARGS.

    python -m trireme devices
    python -m trireme conformance --device cpu --quick

It runs the command the package finds (trireme.core._cli: TRIREME_CLI, the one inside an installed wheel,
beside the loaded library, or on PATH)."""

import os
import sys


def main(argv=None):
    from .core import _cli

    args = sys.argv[1:] if argv is None else list(argv)
    try:
        exe = _cli()
    except FileNotFoundError as e:
        print(f"trireme: {e}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    try:
        os.execv(exe, [exe, *args])  # the command's own exit status and signals, as if it had been run directly
    except OSError as e:
        print(f"trireme: cannot run {exe}: {e}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main())
