"""Finding the Function classes and custom ops of a module from its imports."""
