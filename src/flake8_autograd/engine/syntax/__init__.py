"""Source text, libcst and ast: parsing a class, walks, scopes, names and imports."""
