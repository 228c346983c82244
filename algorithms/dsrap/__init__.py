"""DSRAP: decentralized resource sharing across a network of shared clusters."""
