"""The module analysis rules query, and the facts that need the whole module."""
