import sys

from pytest_mlirtrace._internal.cli.main import main

sys.exit(main())
