"""Measurement support the runner, the adapters and the reference server share.

* `window` — what the process must not do while a request is on the wire.
* `sched` — shorter scheduler turns for the thread that times a request.
* `energy` — joules per request from RAPL, NVML, amdsmi or powermetrics.
* `writer` — the reference server's one thread that makes every scripted write on time.
* `fieldtest` — client accuracy under field conditions (bench/measurement.py --field).
* `loadtest` — client accuracy at many concurrent streams (bench/concurrency.py).
"""
