"""Stop 42: `benchpack` through a wrapper script and nothing else (the baseline arm of stop42-dataclass-code-cache.py)."""
import sys
import benchpack.cli as cli
sys.argv = ["benchpack"] + sys.argv[1:]
cli.run_process()
