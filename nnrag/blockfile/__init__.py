"""The block file format: provenance header and neutral spec."""
