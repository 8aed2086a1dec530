"""Helpers shared by the test tiers: plan scenarios, and the two hosts that run them."""
