"""Feature vectors built from observations: the one place learned policies, learners and environments share."""
