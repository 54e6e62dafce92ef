"""An emulator on a loop of its own thread, for tests that call synchronous code
(schemathesis, the click commands) which must not run inside the test's event loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from payroll_async.emulator import Emulator


class EmulatorThread:
    def __init__(self, **options: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.emulator = Emulator(**options)
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self.emulator.start())
        self.ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.emulator.close())
        self.loop.close()

    def __enter__(self) -> Emulator:
        self.thread.start()
        assert self.ready.wait(10)
        return self.emulator

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
