"""Signing and checking signatures: keys, DSSE envelopes, in-toto statements.

Used by the report (qgate/report/signing.py) and by the reference cache
(qgate/quality/cache_auth.py) alike.
"""
