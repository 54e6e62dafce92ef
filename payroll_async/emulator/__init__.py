"""A local, faithful emulator of the Payroll Onboarding and Webhook Service.

```pycon
>>> from payroll_async.emulator import Emulator
>>> async with Emulator(seed=1, payroll_connections=1000) as emu:
...     print(emu.base_url, emu.token)
```

From a shell: ``python -m payroll_async.emulator --port 8080 --token TOKEN``.
The emulator imports the SDK's models, never its transport or resources, so that the two
cannot agree by accident.
"""

from ._emulator import Churn, Delivery, Emulator
from ._shell import LINK_HEADERS_SWITCH_HELP as LINK_HEADERS_SWITCH_HELP
from ._shell import OPTIONS as OPTIONS
from ._shell import TLS_HELP as TLS_HELP
from ._shell import BadValue as BadValue
from ._shell import Option as Option
from ._shell import cannot_listen as cannot_listen
from ._shell import emulator_from_options as emulator_from_options
from ._shell import serve as serve

# Beyond __all__, the face offers the command (`payroll-async emulator`) the options and
# the serving loop that `python -m payroll_async.emulator` uses.

__all__ = ["Churn", "Delivery", "Emulator"]
