"""hetnn's out-of-process adversarial harness: faults a user will meet (lifecycle, files, environment, resources,
the command line), each case in its own interpreter with a timeout so that a crash or a hang is seen as one.
``python tests/adversarial/run.py`` prints every case and the summary; ``tests/test_adversarial.py`` runs it in the
test command."""
