"""Helpers shared by the CS336 Lecture 2 notebooks: one topic a module."""
