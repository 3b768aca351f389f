"""Measurement support the runner and the adapters share.

* `window` — what the process must not do while a request is on the wire.
* `sched` — shorter scheduler turns for the thread that times a request.
* `energy` — joules per request from RAPL, NVML, amdsmi or powermetrics.
* `fieldtest` — client accuracy under field conditions (bench/measurement.py --field).
"""
