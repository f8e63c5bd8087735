"""A log file on disk: a line index that never holds the lines (`index`), regex search over the
whole file (`search`), shared with a helper process (`search_split`, `search_helper`), and the
`tail -F` rule every follower of a file by name keeps (`tail`).
"""
