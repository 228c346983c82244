"""DSRAP (seed 004): decentralized resource sharing across a network of shared clusters."""
