"""python -m payroll_async.cli"""

from . import main

main()
