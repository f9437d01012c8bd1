"""What forward (or setup_context) leaves on ctx for backward: the paths that save tensors, the saved
slots and where each came from, the arguments saved, ctx attributes set and read, and which branches of
forward a backward can follow (gradient_paths.py).
"""
