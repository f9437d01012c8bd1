"""The models rules read: a Function class, the Function a custom op generates."""
