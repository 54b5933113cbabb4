import sys

from pytest_mlirtrace.cli.main import main

sys.exit(main())
