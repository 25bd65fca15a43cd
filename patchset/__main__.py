from patchset.cli import run

run()
