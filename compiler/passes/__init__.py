"""Passes over the IR: structure checks, shape inference, lint."""
