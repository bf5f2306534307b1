"""Composable Beam PTransforms: thin wrappers that run the `vlnkit` core at scale."""
