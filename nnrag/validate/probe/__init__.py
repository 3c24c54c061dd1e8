"""Probing in the sandbox child: constructor arguments, inputs and repairs."""
