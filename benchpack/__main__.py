from benchpack.cli import run_process

run_process()
