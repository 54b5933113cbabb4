"""``python -m pytest_mlirtrace``: the ``mlirtrace`` command."""
import sys

from pytest_mlirtrace._internal.cli.main import main

sys.exit(main())
