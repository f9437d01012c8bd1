"""What forward (or setup_context) leaves on ctx for backward: the paths that save tensors, the saved
slots and where each came from, the arguments saved, and ctx attributes set and read.
"""
