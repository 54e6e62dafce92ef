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

__all__ = ["Churn", "Delivery", "Emulator"]
