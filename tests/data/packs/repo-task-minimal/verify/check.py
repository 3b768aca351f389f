"""Exit 0 when the workspace's calc.add adds."""
import argparse
import importlib.util
import sys
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--workspace", required=True)
args, _ = parser.parse_known_args()
spec = importlib.util.spec_from_file_location("calc", Path(args.workspace) / "calc.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
sys.exit(0 if module.add(2, 3) == 5 else 1)
