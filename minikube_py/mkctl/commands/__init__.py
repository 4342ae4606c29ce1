"""One module per mkctl command; each defines COMMAND (see ../command.py)."""
