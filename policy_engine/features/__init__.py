"""Featurisers: stable numeric views of observations shared by learners, environments and learned policies."""
