"""What forward leaves on ctx for backward: saved tensors and attributes."""
