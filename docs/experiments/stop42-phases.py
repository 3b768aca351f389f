"""Stop 42 wrapper: `benchpack` with CPU per phase (getrusage at phase ends) and per thread kind (RUSAGE_THREAD
as each thread ends: user, system, voluntary/involuntary switches in thousands); printed to stderr at exit."""
import resource, sys, atexit
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF); return r.ru_utime + r.ru_stime
marks = [("start", cpu())]
def mark(n): marks.append((n, cpu()))
import threading, collections
tcpu = collections.Counter(); tn = collections.Counter()
_orun = threading.Thread.run
def _run(self):
    try: _orun(self)
    finally:
        k = self.name.rstrip("0123456789-") ; r = resource.getrusage(resource.RUSAGE_THREAD)
        tcpu[k] += r.ru_utime; tcpu[k + ".sys"] += r.ru_stime; tcpu[k + ".vcs"] += r.ru_nvcsw / 1000; tcpu[k + ".ivcs"] += r.ru_nivcsw / 1000; tn[k] += 1
threading.Thread.run = _run
import benchpack.cli as cli
mark("import cli")
import benchpack.commands.run as run
orig_handle, orig_run_pack_mod = run._handle, None
import benchpack.run.runner as runner
orig_run_pack = runner.run_pack
def run_pack(*a, **k):
    mark("before run_pack"); r = orig_run_pack(*a, **k); mark("run_pack"); return r
runner.run_pack = run_pack
orig_ps = run.print_summary
def ps(*a, **k):
    r = orig_ps(*a, **k); mark("print_summary"); return r
run.print_summary = ps
def report():
    mark("atexit")
    r = resource.getrusage(resource.RUSAGE_THREAD)
    tcpu["main"] += r.ru_utime; tcpu["main.sys"] += r.ru_stime; tcpu["main.vcs"] += r.ru_nvcsw / 1000; tcpu["main.ivcs"] += r.ru_nivcsw / 1000
    out = [f"{n}={(c - p)*1e3:.1f}" for (n, c), (_, p) in zip(marks[1:], marks)]
    print("THREADS " + " ".join(f"{k}:{tn[k]}:{v*1e3:.1f}" for k, v in tcpu.items()), file=sys.stderr)
    print("PHASES " + " ".join(out) + f" total={(marks[-1][1])*1e3:.1f}", file=sys.stderr)
atexit.register(report)
sys.argv = ["benchpack"] + sys.argv[1:]
cli.run_process()
