"""The file-system locked tools: read, write, edit, glob and grep, and their parts (paths in
the workspace, atomic writes and locks, edits, the folder walk, .gitignore, grep engines)."""
