"""Stop 42 experiment only, NOT product code: `benchpack` with the methods dataclasses generates (Python 3.11's
`dataclasses._create_fn`, copied below) compiled once and kept on disk (marshal), so a later process execs
code objects instead of parsing and compiling 171 source texts. Measures what a run's dataclass creation
costs; see docs/measurement.md, "Issue 34 item 2: stop 42". The first run fills the cache."""
import dataclasses, marshal, sys, atexit
CACHE = "/dev/shm/h44b-dccache.marshal"
try:
    with open(CACHE, "rb") as f:
        codes = marshal.load(f)
except OSError:
    codes = {}
fresh = []
MISSING = dataclasses.MISSING
def _create_fn(name, args, body, *, globals=None, locals=None, return_type=MISSING):
    if locals is None:
        locals = {}
    return_annotation = ''
    if return_type is not MISSING:
        locals['_return_type'] = return_type
        return_annotation = '->_return_type'
    args = ','.join(args)
    body = '\n'.join(f'  {b}' for b in body)
    txt = f' def {name}({args}){return_annotation}:\n{body}'
    local_vars = ', '.join(locals.keys())
    txt = f"def __create_fn__({local_vars}):\n{txt}\n return {name}"
    code = codes.get(txt)
    if code is None:
        code = codes[txt] = compile(txt, "<string>", "exec"); fresh.append(txt)
    ns = {}
    exec(code, globals, ns)
    return ns['__create_fn__'](**locals)
dataclasses._create_fn = _create_fn
def save():
    if fresh:
        with open(CACHE, "wb") as f:
            marshal.dump(codes, f)
atexit.register(save)
import benchpack.cli as cli
sys.argv = ["benchpack"] + sys.argv[1:]
cli.run_process()
