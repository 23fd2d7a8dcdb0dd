"""Entry point for `python -m arraybench` and the `arraybench` command: Linux first, then the CLI."""

import sys

from arraybench.errors import UsageError, require_linux


def main() -> int:
    # Checked before the CLI is imported: elsewhere that import itself fails (fcntl) with a traceback.
    try:
        require_linux()
    except UsageError as e:
        print(f"arraybench: error: {e}", file=sys.stderr)
        return 2
    from arraybench.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    raise SystemExit(main())
