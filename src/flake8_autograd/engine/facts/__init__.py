"""Dataflow facts about a method: tensors, counts, provenance, what ctx holds."""
