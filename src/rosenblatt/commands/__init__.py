"""Sub-commands of the ``rosenblatt`` command line, one module each."""
