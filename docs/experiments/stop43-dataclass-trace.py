"""Stop 43 (h45a) experiment only: `benchpack` through this wrapper logs each dataclass it creates (module, qualname,
frozen, eq, order, unsafe_hash, _create_fn calls) and the thread_time inside _create_fn to /dev/shm/h45a/dc.log, and the
modules loaded to mods.txt. Run it as stop42-harness.py runs a wrapper (WRAP=...), or in place of `-m benchpack.cli`."""
import dataclasses, sys, atexit, time
log = []
orig_process = dataclasses._process_class
orig_create = dataclasses._create_fn
counter = [0]
cpu = [0.0]
def _create_fn(*a, **k):
    counter[0] += 1
    t = time.thread_time()
    try:
        return orig_create(*a, **k)
    finally:
        cpu[0] += time.thread_time() - t
dataclasses._create_fn = _create_fn
def _process_class(cls, init, repr, eq, order, unsafe_hash, frozen, *rest):
    before = counter[0]
    r = orig_process(cls, init, repr, eq, order, unsafe_hash, frozen, *rest)
    log.append((cls.__module__, cls.__qualname__, frozen, eq, order, unsafe_hash, counter[0] - before, rest))
    return r
dataclasses._process_class = _process_class
def report():
    import sys as _s; open("/dev/shm/h45a/mods.txt","w").write("\n".join(sorted(_s.modules)))
    with open("/dev/shm/h45a/dc.log", "w") as f:
        for row in log:
            print(*row, sep="\t", file=f)
        print("TOTAL", len(log), counter[0], round(cpu[0]*1e3, 2), file=f)
atexit.register(report)
import benchpack.cli as cli
sys.argv = ["benchpack"] + sys.argv[1:]
cli.run_process()
