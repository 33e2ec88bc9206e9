"""Tests of the publisher."""
