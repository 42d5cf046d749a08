"""`qgate verify`: open the envelope, check the profile and provenance, recompute every verdict."""
