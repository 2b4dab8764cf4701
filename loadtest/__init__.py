"""Locust users, data generator and benchmark runner for the scoring path."""
