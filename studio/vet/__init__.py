"""Validity checks: rule satisfaction, emergent rules, balance, image features."""
