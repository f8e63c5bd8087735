"""End-to-end: the console in tmux, the wheel, the monitor on the real fleet."""
