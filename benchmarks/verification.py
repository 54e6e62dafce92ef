"""What checking a Standard Webhooks signature costs a receiver, per notification of 1 KiB.

Targets: at most 50 µs per notification for ``v1`` (issue 22), at most 100 µs for ``v1a``
(issue 29). Measured in the same run against baselines: the bare HMAC-SHA256 of the signed
content and the bare Ed25519 verification (``cryptography``) of it (the floors: the
scheme's own work), and the third-party ``standardwebhooks`` package's ``verify`` (what
other SDKs run; it has no ``v1a``).

Cases: one secret and one signature (the common case), and a key rotation (two secrets,
three signature entries, the matching one last: the most the receiver does for a genuine
notification); for ``v1a``, one ``whpk_`` key, and a rotation from a ``whsec_`` secret to
a ``whpk_`` key with a delivery signed both ways. The headers are aiohttp's own
``CIMultiDictProxy``, as ``EventRouter`` reads them; ``verify()`` is measured too, with a
plain dict (it reads the key on every call).

    python3 benchmarks/verification.py
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

from multidict import CIMultiDict, CIMultiDictProxy

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from payroll_async.events import sign, verify
from payroll_async.events._signature import Signer

TARGET_US = 50.0
TARGET_V1A_US = 100.0
WHSK = "whsk_nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A="  # RFC 8032's TEST 1 seed
WHPK = "whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="  # and its public key
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OLD = "whsec_" + base64.b64encode(b"the secret being retired").decode()
STRANGER = "whsec_" + base64.b64encode(b"nobody's secret at all!!").decode()


def body_of(size: int) -> bytes:
    event = {"eventId": "evt_1", "eventType": "PAYROLL_PROCESSED", "data": {"pad": ""}}
    base = len(json.dumps(event).encode())
    event["data"] = {"pad": "x" * (size - base)}
    body = json.dumps(event).encode()
    assert len(body) == size
    return body


def per_call_us(
    fn: Callable[[], object],
    number: int = 20_000,
    repeat: int = 7,
    timer: Callable[[], float] = time.perf_counter,
) -> float:
    """The best of ``repeat`` runs of ``number`` calls, in µs per call (timeit's advice)."""
    return min(timeit.repeat(fn, number=number, repeat=repeat, timer=timer)) / number * 1e6


def main() -> int:
    import standardwebhooks

    body = body_of(1024)
    now = int(time.time())
    signed = sign(SECRET, "evt_1", now, body)
    headers = CIMultiDictProxy(CIMultiDict(signed))
    stranger = sign(STRANGER, "evt_1", now, body)["webhook-signature"]
    rotation_headers = CIMultiDictProxy(
        CIMultiDict(
            {
                **signed,
                # two entries that match neither secret, then the one that does: every
                # entry is compared under both secrets before the match
                "webhook-signature": f"v1a,xyz {stranger} {signed['webhook-signature']}",
            }
        )
    )
    one = Signer(SECRET, 300)
    rotation = Signer([OLD, SECRET], 300)  # the matching secret is tried second
    assert one.check(headers, body, now) is None
    assert rotation.check(rotation_headers, body, now) is None
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    message = f"evt_1.{now}.".encode() + body
    library = standardwebhooks.Webhook(SECRET)
    plain = dict(signed)

    floor = per_call_us(lambda: hmac.new(key, message, hashlib.sha256).digest())
    ours = per_call_us(lambda: one.check(headers, body, now))
    ours_rotation = per_call_us(lambda: rotation.check(rotation_headers, body, now))
    theirs = per_call_us(lambda: library.verify(body, plain, json_parse=False))

    print(f"Standard Webhooks verification of a {len(body):,}-byte notification (µs per call)")
    print(f"  {'bare HMAC-SHA256 (floor)':<44} {floor:7.2f}")
    print(f"  {'EventRouter, one secret':<44} {ours:7.2f}   {ours / floor:4.1f}x the floor")
    print(
        f"  {'EventRouter, rotation (2 secrets, 3 entries)':<44} {ours_rotation:7.2f}"
        f"   {ours_rotation / floor:4.1f}x the floor"
    )
    print(
        f"  {'standardwebhooks.Webhook.verify':<44} {theirs:7.2f}"
        f"   ours is {ours / theirs:4.2f}x its cost"
    )
    worst = max(ours, ours_rotation)
    ok = worst <= TARGET_US
    print(
        f"target: <= {TARGET_US:g} µs per notification: {'met' if ok else 'MISSED'} ({worst:.1f})"
    )
    return 0 if ok and v1a(body, now) else 1


def v1a(body: bytes, now: int) -> bool:
    """The v1a (Ed25519) half: the floor, one whpk_ key, a rotation, and verify()."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    signed = sign(WHSK, "evt_1", now, body)
    headers = CIMultiDictProxy(CIMultiDict(signed))
    both = CIMultiDictProxy(
        CIMultiDict(
            {
                **signed,
                # a v1 entry of the retired secret first, then the v1a entry
                "webhook-signature": f"{sign(OLD, 'evt_1', now, body)['webhook-signature']} "
                f"{signed['webhook-signature']}",
            }
        )
    )
    one = Signer(WHPK, 300)
    rotation = Signer([SECRET, WHPK], 300)  # the v1 entry matches no secret: both are tried
    assert one.check(headers, body, now) is None
    assert rotation.check(both, body, now) is None
    key = Ed25519PublicKey.from_public_bytes(base64.b64decode(WHPK.removeprefix("whpk_")))
    signature = base64.b64decode(signed["webhook-signature"].removeprefix("v1a,"))
    message = f"evt_1.{now}.".encode() + body
    plain = dict(signed)

    # CPU time of this process: on a shared machine the wall clock also counts the time
    # other processes hold the core, which an Ed25519 check (tens of µs) is exposed to
    def cpu_us(fn: Callable[[], object]) -> float:
        return per_call_us(fn, 2_000, timer=time.process_time)

    floor = cpu_us(lambda: key.verify(signature, message))
    ours = cpu_us(lambda: one.check(headers, body, now))
    ours_rotation = cpu_us(lambda: rotation.check(both, body, now))
    function = cpu_us(lambda: verify(body, plain, secret=WHPK))
    print(f"v1a (Ed25519) verification of a {len(body):,}-byte notification (CPU µs per call)")
    print(f"  {'bare Ed25519 verify (floor)':<44} {floor:7.2f}")
    for name, value in [
        ("EventRouter, one whpk_ key", ours),
        ("EventRouter, rotation (whsec_ + whpk_)", ours_rotation),
        ("verify(body, dict, secret='whpk_...')", function),
    ]:
        print(f"  {name:<44} {value:7.2f}   {value / floor:4.2f}x the floor")
    worst = max(ours, ours_rotation, function)
    ok = worst <= TARGET_V1A_US
    print(
        f"target: <= {TARGET_V1A_US:g} µs per v1a notification: "
        f"{'met' if ok else 'MISSED'} ({worst:.1f}; ours adds {worst - floor:+.1f} to the floor"
        f"{'' if floor <= TARGET_V1A_US else ', which alone is over the target on this machine'})"
    )
    return ok


if __name__ == "__main__":
    sys.exit(main())
