"""Stop 43 (h45a): CPU (thread_time) of importing every benchpack module a 64-stream `benchpack run` loads, in one fresh
process. The list (/dev/shm/h45a/run_modules.txt, 56 names) is the `benchpack.*` entries of sys.modules at the end of
main's run; run with PYTHONPATH=<tree> and bytecode writing on, trees interleaved."""
import time
t0 = time.thread_time()
import importlib
for name in open("/dev/shm/h45a/run_modules.txt").read().split():
    importlib.import_module(name)
t1 = time.thread_time()
print(f"{(t1 - t0) * 1e3:.2f}")
